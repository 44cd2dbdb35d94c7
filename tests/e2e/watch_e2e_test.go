package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/ptytest"
	"github.com/troupe-ai/troupe/messages"
)

// envelopes parses watch --json output, one envelope per line.
func envelopes(t *testing.T, out string) []messages.Event {
	t.Helper()
	var evs []messages.Event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev messages.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Validate() != nil {
			t.Fatalf("watch printed a line that is not an event: %q", line)
		}
		evs = append(evs, ev)
	}
	return evs
}

func ofRun(evs []messages.Event, run string) []messages.Event {
	var out []messages.Event
	for _, ev := range evs {
		if ev.Run == run {
			out = append(out, ev)
		}
	}
	return out
}

// `watch --follow`, in its own process, keeps watching into a second run
// after the first ends and prints both runs' events exactly as stored; a
// watcher without --follow ends by itself with the first run. Interrupted,
// the follower exits 130.
func TestWatchFollowsIntoTheNextRun(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0")
	url := serve.firstLine(30 * time.Second)
	defer serve.cmd.Process.Signal(syscall.SIGTERM)
	follower := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", url, "--follow", "--json")
	once := start(t, bin.orchestrator, []string{"NO_COLOR=1"}, "watch", "--nats", url, "--json")
	follower.waitStderr("watching every run", 30*time.Second)
	once.waitStderr("watching every run", 30*time.Second)

	srv := fanout(2)
	defer srv.Close()
	first := runJSON(t, start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", repo(t, ""), "--json", "first"))
	if code := once.wait(time.Minute); code != 0 {
		t.Fatalf("watch without --follow exited %d after the first run:\n%s", code, once.errs())
	}
	stored1 := storedEvents(t, url, first.Run)
	sameEvents(t, envelopes(t, once.out()), stored1)

	srv2 := fanout(3)
	defer srv2.Close()
	second := runJSON(t, start(t, bin.orchestrator, modelEnv(srv2), "run", "--nats", url, "--workspace", repo(t, ""), "--json", "second"))
	stored2 := storedEvents(t, url, second.Run)
	poll(t, time.Minute, func() error {
		if n := len(ofRun(envelopes(t, follower.out()), second.Run)); n < len(stored2) {
			return fmt.Errorf("the follower printed %d of the second run's %d events", n, len(stored2))
		}
		return nil
	})
	select {
	case <-follower.done:
		t.Fatalf("the follower exited:\n%s", follower.errs())
	default:
	}
	all := envelopes(t, follower.out())
	sameEvents(t, ofRun(all, first.Run), stored1)
	sameEvents(t, ofRun(all, second.Run), stored2)
	if len(all) != len(stored1)+len(stored2) {
		t.Errorf("the follower printed %d events, the runs stored %d", len(all), len(stored1)+len(stored2))
	}
	must(t, follower.cmd.Process.Signal(os.Interrupt))
	if code := follower.wait(30 * time.Second); code != 130 {
		t.Errorf("interrupted follower exited %d:\n%s", code, follower.errs())
	}
}

// watchOnTerminal runs `watch --from-start --run ID` with its output on a
// pseudo-terminal and returns what it drew.
func watchOnTerminal(t *testing.T, url, run string, env ...string) string {
	t.Helper()
	p, err := ptytest.Open(120, 40)
	if err != nil {
		peer.Missing(t, "pty", "no pseudo-terminals here: %v", err)
	}
	defer p.Close()
	cmd := exec.Command(bin.orchestrator, "watch", "--nats", url, "--run", run, "--from-start")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = p.TTY, p.TTY
	must(t, cmd.Start())
	must(t, p.CloseTTY())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("watch on a terminal: %v\n%s", err, p.Output())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		t.Fatalf("watch on a terminal did not end with the run:\n%q", p.Output())
	}
	p.Wait()
	return p.Output()
}

// On a terminal, watch draws the agent tree in colour; with NO_COLOR or
// TERM=dumb the same tree without colour; piped, one JSON envelope per
// line even without --json.
func TestWatchColourOnlyOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process")
	}
	serve := start(t, bin.orchestrator, nil, "serve", "--listen", "127.0.0.1:0")
	url := serve.firstLine(30 * time.Second)
	defer serve.cmd.Process.Signal(syscall.SIGTERM)
	srv := fanout(2)
	defer srv.Close()
	res := runJSON(t, start(t, bin.orchestrator, modelEnv(srv), "run", "--nats", url, "--workspace", repo(t, ""), "--json", "find main"))

	colour := watchOnTerminal(t, url, res.Run, "NO_COLOR=", "TERM=xterm-256color")
	if !strings.Contains(colour, "\x1b[32mfinished\x1b[0m") || !strings.Contains(colour, "\x1b[1mrun ") || strings.Contains(colour, `{"v":1`) {
		t.Errorf("no coloured tree on a terminal:\n%q", colour)
	}
	for _, env := range [][]string{{"NO_COLOR=1", "TERM=xterm-256color"}, {"NO_COLOR=", "TERM=dumb"}} {
		plain := watchOnTerminal(t, url, res.Run, env...)
		if strings.Contains(plain, "\x1b[32m") || strings.Contains(plain, "\x1b[1m") || !strings.Contains(plain, "root") ||
			!strings.Contains(plain, "finished") || !strings.Contains(plain, "explore-") {
			t.Errorf("%v: want the tree without colour:\n%q", env, plain)
		}
	}
	piped := start(t, bin.orchestrator, []string{"NO_COLOR=", "TERM=xterm-256color"}, "watch", "--nats", url, "--run", res.Run, "--from-start")
	if code := piped.wait(time.Minute); code != 0 {
		t.Fatalf("piped watch exited %d:\n%s", code, piped.errs())
	}
	if strings.Contains(piped.out(), "\x1b") {
		t.Errorf("escape codes on a pipe:\n%q", piped.out())
	}
	sameEvents(t, envelopes(t, piped.out()), storedEvents(t, url, res.Run))
}
