package builtin

import (
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/tools"
)

// pick is a registry of the built-in tools named.
func pick(names ...string) *tools.Registry { return tools.NewRegistry(All()...).Filter(names) }

func TestGuidanceFollowsTheToolSet(t *testing.T) {
	t.Parallel()
	explore := pick("read_file", "grep", "find_files", "list_dir", "think")
	worker := pick("read_file", "grep", "edit_file", "write_file", "shell", "apply_patch")
	g := tools.Guidance(explore)
	golden(t, "guidance/explore", g)
	for _, absent := range []string{"edit_file", "shell", "delegate", "apply_patch", "Editing"} {
		if strings.Contains(g, absent) {
			t.Errorf("explore guidance mentions %q, which explore agents do not have", absent)
		}
	}
	w := tools.Guidance(worker)
	golden(t, "guidance/worker", w)
	for _, want := range []string{"## Editing", "Read a file before you change it", "not to read, search or edit files: read_file, grep, edit_file do that", "## Search in two steps"} {
		if !strings.Contains(w, want) {
			t.Errorf("worker guidance lacks %q", want)
		}
	}
	withJobs := pick("shell", "job_output", "job_kill")
	if !strings.Contains(tools.Guidance(withJobs), "shell background: true, then read them with job_output") {
		t.Errorf("guidance with the job tools lacks the background line:\n%s", tools.Guidance(withJobs))
	}
	if strings.Contains(w, "background: true") {
		t.Error("background jobs shown without job_output and job_kill")
	}
	// Every tool name in the text is one the agent has.
	for _, reg := range []*tools.Registry{explore, worker, withJobs, pick("grep", "read_file")} {
		text := tools.Guidance(reg)
		for _, name := range tools.NewRegistry(All()...).Names() {
			if _, ok := reg.Get(name); !ok && strings.Contains(text, name) {
				t.Errorf("guidance for %v mentions %s", reg.Names(), name)
			}
		}
	}
	if strings.Contains(tools.Guidance(pick("think")), "Search in two steps") {
		t.Error("two-step search shown without grep and read_file")
	}
}

// Each tool declares its own guidance lines: every line a tool declares
// names that tool, and a registry with every tool shows each line.
func TestGuidanceLinesAreDeclaredByTheirTools(t *testing.T) {
	t.Parallel()
	all := tools.NewRegistry(All()...)
	full := tools.Guidance(all)
	declaring := 0
	for _, s := range all.Specs() {
		for _, gl := range s.Guidance {
			declaring++
			text := gl.Text(func(names ...string) bool {
				for _, n := range names {
					if _, ok := all.Get(n); !ok {
						return false
					}
				}
				return true
			})
			if text == "" {
				continue // a line another tool's covers (web_fetch beside web_search)
			}
			if !strings.Contains(text, s.Name) {
				t.Errorf("%s declares a line that does not name it: %q", s.Name, text)
			}
			if !strings.Contains(full, text) {
				t.Errorf("%s's line is missing from the guidance: %q", s.Name, text)
			}
		}
	}
	if declaring < 10 {
		t.Errorf("only %d guidance lines are declared by tools", declaring)
	}
}
