package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// workerPool runs, in the fresh clone, the try-out block (the build, the
// scripted model), "A worker pool across machines" (the hub, a node, a
// run whose explore agent runs on the node, watched live by the first
// line of "Watching a swarm"), the watch line that run printed as the
// user would copy it, the remote change of "Parallel workers and their
// changes", and the JSON watch.
func workerPool(t *testing.T, clone, text string) {
	store := t.TempDir() // serve's store, where its creds files are
	port := freePort(t)
	s := newSession(t, clone, strings.NewReplacer("4222", port, "/tmp/troupe-nats", store, "8080", freePort(t), "9101", freePort(t)),
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "TROUPE_NATS_URL=", "TROUPE_NATS_CREDS=")
	tryOut(t, s, text)
	pool := commandLines(shBlocks(t, text, "## A worker pool across machines")[0])
	if len(pool) != 3 || !strings.HasSuffix(pool[0], "&") || !strings.HasSuffix(pool[1], "&") {
		t.Fatalf("want the serve, node and run lines, got %q", pool)
	}
	s.run(pool[0], time.Minute)
	s.run(pool[1], time.Minute)
	// The live watch of the next section, started before the run it
	// shows: piped, it prints one event per line and ends with the run.
	live := s.repl.Replace(commandLines(shBlocks(t, text, "## Watching a swarm")[0])[0])
	w := exec.Command("bash", "-c", "exec "+live)
	w.Dir, w.Env = clone, append(os.Environ(), s.env...)
	w.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	wout, werr := &syncBuffer{}, &syncBuffer{}
	w.Stdout, w.Stderr = wout, werr
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	watchDone := make(chan error, 1)
	go func() { watchDone <- w.Wait() }()
	for deadline := time.Now().Add(3 * time.Minute); !strings.Contains(werr.String(), "watching"); <-time.After(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never started:\n%s", live, werr.String())
		}
	}
	out, errs := s.must(pool[2], 3*time.Minute)
	if !strings.HasPrefix(out, "(scripted model) One explore agent looked at the workspace") || !strings.Contains(errs, "(remote)") {
		t.Fatalf("%s:\nstdout:\n%s\nstderr:\n%s", pool[2], out, errs)
	}
	select {
	case err := <-watchDone:
		if err != nil || !strings.Contains(wout.String(), `"type":"run.finished"`) || !strings.Contains(wout.String(), `"kind":"explore"`) {
			t.Errorf("%s: %v\nstderr:\n%s\nstdout (%d bytes)", live, err, werr.String(), len(wout.String()))
		}
	case <-time.After(2 * time.Minute):
		_ = syscall.Kill(-w.Process.Pid, syscall.SIGKILL)
		t.Errorf("%s did not end with the run it watched:\n%s", live, werr.String())
	}
	// The watch line the run printed, copied as it is: with the
	// watcher's credentials it replays the finished run.
	m := regexp.MustCompile(`watch: (orchestrator watch .*)`).FindStringSubmatch(errs)
	if m == nil || !strings.Contains(m[1], "--creds "+filepath.Join(store, "creds", "watcher.creds")) {
		t.Fatalf("the run printed no watch line with the watcher's creds:\n%s", errs)
	}
	if out, werrs, code := sh(t, clone, s.env, m[1], 2*time.Minute); code != 0 || !strings.Contains(out, `"type":"run.finished"`) {
		t.Errorf("%s (as printed, piped): exit %d\nstderr:\n%s\nstdout (%d bytes)", m[1], code, werrs, len(out))
	}

	// A remote worker's change arriving, with the hub and node above: the
	// second block of "Parallel workers and their changes".
	remote := commandLines(shBlocks(t, text, "## Parallel workers and their changes")[1])
	if len(remote) != 1 {
		t.Fatalf("want one remote run line, got %q", remote)
	}
	out, errs = s.must(remote[0], 3*time.Minute)
	landed, _ := os.ReadFile(filepath.Join(clone, llmtest.TryOutFile))
	if !regexp.MustCompile(`"status":\s*"applied"`).MatchString(out) || !strings.HasPrefix(string(landed), "Written by a troupe worker") {
		t.Errorf("%s: %s %q\nstdout:\n%s\nstderr:\n%s", remote[0], llmtest.TryOutFile, landed, out, errs)
	}
	_ = os.Remove(filepath.Join(clone, llmtest.TryOutFile))

	// Watching it: the JSON form ends with the run it replayed.
	for _, line := range commandLines(shBlocks(t, text, "## Watching a swarm")[0]) {
		if !strings.Contains(line, "--json") {
			continue // the live tree needs a terminal and a run to follow
		}
		out, errs, code := s.run(line, 2*time.Minute)
		if code != 0 || !strings.Contains(out, `"type":"run.finished"`) || !strings.Contains(out, `"type":"node.joined"`) {
			t.Errorf("%s: exit %d\nstderr:\n%s\nstdout (%d bytes)", line, code, errs, len(out))
		}
	}
}
