package shell

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/procguard"
)

// skipWithoutCgroups skips a test that needs commands in cgroups of their
// own, saying why the machine has none.
func skipWithoutCgroups(t *testing.T) {
	t.Helper()
	g := procguard.New()
	defer g.Close()
	if ok, why := g.Cgroups(); !ok {
		t.Skipf("commands cannot run in cgroups of their own here (%s): a setsid grandchild escapes its command's process group", why)
	}
}

// A process that leaves the command's process group (setsid) still dies
// with the command when cgroups are available.
func TestShellKillsSetsidGrandchild(t *testing.T) {
	t.Parallel()
	skipWithoutCgroups(t)
	s := newTestSession(t)
	r := shellCall(t.Context(), t, s, map[string]any{
		"command": `setsid -f sh -c 'echo $$ > setsid.pid; exec sleep 1000' >/dev/null 2>&1; while [ ! -s setsid.pid ]; do :; done; echo started`,
	})
	if r.Text != "[exit: 0]\nstarted\n" {
		t.Fatalf("%q", r.Text)
	}
	pid := shellPids(t, s, "setsid.pid")[0]
	shellEventually(t, fmt.Sprintf("setsid grandchild %d to die", pid), func() bool { return shellPidDead(pid) })

	// The same in a session (after the command) and for a job (on kill).
	r = sessionCall(t, s, "s", `setsid -f sh -c 'echo $$ > s.pid; exec sleep 1000' >/dev/null 2>&1; while [ ! -s s.pid ]; do :; done; echo started`)
	if r.Text != "[exit: 0]\nstarted\n" {
		t.Fatalf("session: %q", r.Text)
	}
	pid = shellPids(t, s, "s.pid")[0]
	shellEventually(t, fmt.Sprintf("session's setsid grandchild %d to die", pid), func() bool { return shellPidDead(pid) })
	id := startTestJob(t, s, `setsid -f sh -c 'echo $$ > j.pid; exec sleep 1000' >/dev/null 2>&1; exec sleep 1001`)
	shellEventually(t, "the job's grandchild to start", func() bool {
		b, _ := os.ReadFile(filepath.Join(s.Workspace.Root(), "j.pid"))
		return len(b) > 0
	})
	jobCall(t, s, JobKill(), map[string]any{"job_id": id})
	pid = shellPids(t, s, "j.pid")[0]
	shellEventually(t, fmt.Sprintf("job's setsid grandchild %d to die", pid), func() bool { return shellPidDead(pid) })
}

// procHelperEnv makes the test binary a process that starts commands
// and waits to be killed (see TestProcessTreesDieWithTheirProcess).
const procHelperEnv = "TROUPE_PROC_HELPER"

// When the process running the tools dies by SIGKILL, the helper reaper
// kills what its commands, sessions and jobs were running: the process
// groups always, setsid grandchildren too where cgroups are available.
func TestProcessTreesDieWithTheirProcess(t *testing.T) {
	if dir := os.Getenv(procHelperEnv); dir != "" {
		procHelper(t, dir)
		return
	}
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestProcessTreesDieWithTheirProcess$")
	cmd.Env = append(os.Environ(), procHelperEnv+"="+dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	files := []string{"job.pid", "session.pid", "oneshot.pid", "setsid.pid", "cgroups"}
	ready := func() bool {
		for _, f := range files {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || !strings.HasSuffix(string(b), "\n") {
				return false
			}
		}
		return true
	}
	shellEventually(t, "the helper's commands to start", func() bool {
		select {
		case err := <-done:
			t.Fatalf("helper ended early: %v", err)
		default:
		}
		return ready()
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-done
	cg, _ := os.ReadFile(filepath.Join(dir, "cgroups"))
	withCgroups := strings.HasPrefix(string(cg), "true")
	for _, f := range files[:len(files)-1] {
		b, _ := os.ReadFile(filepath.Join(dir, f))
		for _, field := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(field)
			if err != nil {
				t.Fatalf("%s: %q", f, b)
			}
			if f == "setsid.pid" && !withCgroups {
				t.Logf("no cgroups (%s): the setsid grandchild %d is not tracked; killing it", strings.TrimSpace(string(cg)), pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
				continue
			}
			shellEventually(t, fmt.Sprintf("%s pid %d to die with its process", f, pid), func() bool { return shellPidDead(pid) })
		}
	}
	if withCgroups {
		own, err := procguard.OwnCgroupDir()
		if err != nil {
			t.Fatal(err)
		}
		pattern := filepath.Join(own, fmt.Sprintf("troupe-%d-*", cmd.Process.Pid))
		shellEventually(t, "the dead process's cgroups to be removed", func() bool {
			m, _ := filepath.Glob(pattern)
			return len(m) == 0
		})
	}
}

// procHelper starts a job, a session command and a one-shot command that
// all keep running, writes their pids under dir and waits to be killed.
func procHelper(t *testing.T, dir string) {
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := tools.NewSession("helper", ws, tools.Config{DataDir: t.TempDir()})
	ok, why := procsOf(s).Cgroups()
	startTestJob(t, s, "sleep 1000 & echo $! > job.tmp; echo $$ >> job.tmp; mv job.tmp job.pid; exec sleep 1001")
	go Shell().Run(t.Context(), s, []byte(`{"session":"s","command":"sleep 1002 & echo $! > session.tmp; mv session.tmp session.pid; wait"}`))
	go Shell().Run(t.Context(), s, []byte(`{"command":"setsid -f sh -c 'echo $$ > setsid.tmp; mv setsid.tmp setsid.pid; exec sleep 1003' >/dev/null 2>&1; sleep 1004 & echo $! > oneshot.tmp; echo $$ >> oneshot.tmp; mv oneshot.tmp oneshot.pid; wait"}`))
	status := "true\n"
	if !ok {
		status = "false: " + why + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroups"), []byte(status), 0o600); err != nil {
		t.Fatal(err)
	}
	select {} // killed by the parent test
}

// Close removes the guard's cgroups.
func TestProcGuardRemovesItsCgroups(t *testing.T) {
	t.Parallel()
	skipWithoutCgroups(t)
	g := procguard.New()
	s := newTestSession(t)
	UseProcs(s, g)
	r := shellCall(t.Context(), t, s, map[string]any{"command": "cat /proc/self/cgroup"})
	base := g.CgroupDir()
	if !strings.Contains(r.Text, "::"+strings.TrimPrefix(base, mustMount(t))+"/c") {
		t.Errorf("the command did not run in a cgroup under %s: %q", base, r.Text)
	}
	if entries, _ := filepath.Glob(filepath.Join(base, "c[0-9]*")); len(entries) != 0 {
		t.Errorf("command cgroups left after the command: %v", entries)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(base); !os.IsNotExist(err) {
		t.Errorf("%s still exists after Close: %v", base, err)
	}
	if r := shellCall(t.Context(), t, s, map[string]any{"command": "true"}); !r.IsError {
		t.Errorf("a command ran after its guard closed: %q", r.Text)
	}
}

func mustMount(t *testing.T) string {
	t.Helper()
	m, _, err := procguard.Cgroup2Mount()
	if err != nil {
		t.Fatal(err)
	}
	return m
}
