package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

func TestToolsList(t *testing.T) {
	code, out, _ := runCLI(t, "tools", "list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !strings.HasPrefix(lines[0], "NAME") || !strings.Contains(lines[0], "TIER") || !strings.Contains(lines[0], "ACCESS") {
		t.Fatalf("header %q", lines[0])
	}
	for _, want := range []string{"read_file", "edit_file", "write_file", "apply_patch", "list_dir", "shell", "job_output", "job_kill", "think", "todo", "grep", "find_files", "delegate"} {
		found := false
		for _, l := range lines[1:] {
			f := strings.Fields(l)
			if len(f) >= 4 && f[0] == want {
				found = true
				if want := map[string]string{"read_file": "read-only", "write_file": "mutating", "delegate": "spawns"}[f[0]]; want != "" && f[2] != want {
					t.Errorf("%s access %q, want %q", f[0], f[2], want)
				}
				if f[2] != "read-only" && f[2] != "mutating" && f[2] != "spawns" {
					t.Errorf("%s access %q", want, f[2])
				}
			}
		}
		if !found {
			t.Errorf("tools list lacks %s", want)
		}
	}
}

func TestToolsCallExitCodesAndJSON(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, "tools", "call", "read_file", `{"path":"a.txt"}`, "--workspace", ws)
	if code != 0 || out != "L1: alpha\nL2: beta\n" {
		t.Fatalf("read_file: exit %d, %q", code, out)
	}
	code, out, _ = runCLI(t, "tools", "call", "--workspace="+ws, "read_file", `{"path":"missing.txt"}`, "--json")
	if code != 1 {
		t.Fatalf("error result: exit %d", code)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	for _, k := range []string{"text", "is_error", "truncated"} {
		if _, ok := res[k]; !ok {
			t.Errorf("--json lacks %q: %s", k, out)
		}
	}
	if res["is_error"] != true {
		t.Errorf("is_error = %v", res["is_error"])
	}
	for _, args := range [][]string{
		{"tools", "call"},
		{"tools", "call", "read_file", `{not json`},
		{"tools", "call", "read_file", "{}", "--bogus"},
		{"tools", "call", "read_file", "{}", "--workspace", filepath.Join(ws, "nope")},
		{"tools"},
		{"nonsense"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 || stderr == "" {
			t.Errorf("%v: exit %d (want 2), stderr %q", args, code, stderr)
		}
	}
	code, out, _ = runCLI(t, "tools", "call", "no_such_tool", "{}", "--workspace", ws)
	if code != 1 || !strings.Contains(out, "unknown tool") || !strings.Contains(out, "read_file") {
		t.Errorf("unknown tool: exit %d %q", code, out)
	}
}

// A script runs in ONE session: the read on line 1 lets the edit on line 2
// through, and the todo list persists between lines.
func TestToolsCallScriptSharesOneSession(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "f.go"), []byte("package f\n\nconst X = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "s.jsonl")
	lines := strings.Join([]string{
		`{"name":"read_file","args":{"path":"f.go"}}`,
		``,
		`# comments and blank lines are skipped`,
		`{"name":"edit_file","args":{"path":"f.go","old_string":"X = 1","new_string":"X = 2"}}`,
		`{"name":"todo","args":{"action":"add","task":"ship it"}}`,
		`{"name":"todo","args":{"action":"list"}}`,
	}, "\n")
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "tools", "call", "--script", script, "--workspace", ws)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"=== 1 read_file\n", "=== 2 edit_file\nEdited f.go: replaced 1 occurrence(s)", "=== 3 todo\n", "=== 4 todo\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("script output lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "ship it") != 2 {
		t.Errorf("todo list did not persist across lines:\n%s", out)
	}
	got, _ := os.ReadFile(filepath.Join(ws, "f.go"))
	if !strings.Contains(string(got), "X = 2") {
		t.Errorf("edit not applied: %s", got)
	}
	// A malformed line stops the script before anything runs.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"name":"write_file","args":{"path":"new.txt","content":"x"}}`+"\n"+`{"nme":"x"}`+"\n"), 0o644)
	if code, _, stderr := runCLI(t, "tools", "call", "--script", bad, "--workspace", ws); code != 2 || !strings.Contains(stderr, "bad.jsonl:2") {
		t.Errorf("bad script: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(ws, "new.txt")); !os.IsNotExist(err) {
		t.Error("line 1 of a malformed script ran")
	}
}

// A script's shell calls share sessions and jobs: state carries over in a
// session, a background job is read and stopped by later lines, a bad job
// ID is an error result, and nothing outlives the script.
func TestToolsCallScriptShellSessionsAndJobs(t *testing.T) {
	ws := t.TempDir()
	if err := os.Mkdir(filepath.Join(ws, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "s.jsonl")
	lines := strings.Join([]string{
		`{"name":"shell","args":{"session":"dev","command":"cd sub && export N=5"}}`,
		`{"name":"shell","args":{"session":"dev","command":"echo \"$N in $(basename $PWD)\""}}`,
		`{"name":"shell","args":{"background":true,"command":"echo $$ > job.pid; echo up; exec sleep 1000"}}`,
		`{"name":"job_output","args":{"job_id":"j1","wait":30}}`,
		`{"name":"job_output","args":{"job_id":"j9"}}`,
		`{"name":"shell","args":{"background":true,"command":"echo $$ > left.pid; echo up2; exec sleep 1001"}}`,
		`{"name":"job_kill","args":{"job_id":"j1"}}`,
		`{"name":"job_output","args":{"job_id":"j2","wait":30}}`,
	}, "\n")
	if err := os.WriteFile(script, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runCLI(t, "tools", "call", "--script", script, "--workspace", ws)
	if code != 1 {
		t.Fatalf("exit %d (want 1: line 5 is an error result)\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{
		"=== 2 shell\n[exit: 0]\n5 in sub\n",
		"=== 3 shell\n[job j1 started]\n",
		"=== 4 job_output\n[job j1: running]\nup\n",
		"=== 5 job_output\njob_output: no job \"j9\"; your jobs: j1 (running)\n",
		"=== 7 job_kill\n[job j1: stopped by job_kill, exit: 143]\n",
		"=== 8 job_output\n[job j2: running]\nup2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"job.pid", "left.pid"} {
		b, err := os.ReadFile(filepath.Join(ws, f))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err := syscall.Kill(pid, 0); err == nil && !isZombie(pid) {
			t.Errorf("%s: pid %d outlived the script", f, pid)
		}
	}
}

// isZombie reports whether pid has exited and waits to be reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'Z' || b[i+2] == 'X')
}

// checkFor polls cond for up to 30 s.
func checkFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 30s")
		}
		<-time.After(2 * time.Millisecond)
	}
}
