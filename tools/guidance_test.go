package tools

import (
	"strings"
	"testing"
)

func named(name string, readOnly bool) Tool {
	return New(Spec{Name: name, ReadOnly: readOnly}, func(_ ctxT, _ *Session, _ struct{}) (Result, error) {
		return Text(""), nil
	})
}

func TestGuidanceFollowsTheToolSet(t *testing.T) {
	t.Parallel()
	explore := NewRegistry(named("read_file", true), named("grep", true), named("find_files", true), named("list_dir", true), named("think", true))
	worker := NewRegistry(named("read_file", true), named("grep", true), named("edit_file", false), named("write_file", false), named("shell", false), named("apply_patch", false))
	g := Guidance(explore)
	golden(t, "guidance/explore", g)
	for _, absent := range []string{"edit_file", "shell", "delegate", "apply_patch", "Editing"} {
		if strings.Contains(g, absent) {
			t.Errorf("explore guidance mentions %q, which explore agents do not have", absent)
		}
	}
	w := Guidance(worker)
	golden(t, "guidance/worker", w)
	for _, want := range []string{"## Editing", "Read a file before you change it", "not to read, search or edit files: read_file, grep, edit_file do that", "## Search in two steps"} {
		if !strings.Contains(w, want) {
			t.Errorf("worker guidance lacks %q", want)
		}
	}
	withJobs := NewRegistry(named("shell", false), named("job_output", true), named("job_kill", false))
	if !strings.Contains(Guidance(withJobs), "shell background: true, then read them with job_output") {
		t.Errorf("guidance with the job tools lacks the background line:\n%s", Guidance(withJobs))
	}
	if strings.Contains(w, "background: true") {
		t.Error("background jobs shown without job_output and job_kill")
	}
	// Every tool name in the text is one the agent has.
	for _, reg := range []*Registry{explore, worker, withJobs, NewRegistry(named("grep", true), named("read_file", true))} {
		text := Guidance(reg)
		for _, name := range NewRegistry(All()...).Names() {
			if _, ok := reg.Get(name); !ok && strings.Contains(text, name) {
				t.Errorf("guidance for %v mentions %s", reg.Names(), name)
			}
		}
	}
	if strings.Contains(Guidance(NewRegistry(named("think", true))), "Search in two steps") {
		t.Error("two-step search shown without grep and read_file")
	}
}
