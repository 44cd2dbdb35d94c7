package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// lockedBuffer is a writer the serving goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.WriteString(string(p))
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serving is an `orchestrator serve` running in the test.
type serving struct {
	url    string
	stderr *lockedBuffer
	stop   func() int // interrupts it and returns its exit code
}

// startServe runs cmdServe with args until the test stops it; the
// environment has only HOME, an empty directory.
func startServe(t *testing.T, args ...string) *serving {
	t.Helper()
	env := map[string]string{"HOME": t.TempDir()}
	ctx, cancel := context.WithCancel(t.Context())
	out, w := io.Pipe()
	s := &serving{stderr: &lockedBuffer{}}
	code := make(chan int, 1)
	go func() {
		c, err := cmdServe(ctx, args, func(k string) string { return env[k] }, w, s.stderr)
		if err != nil {
			s.stderr.Write([]byte(err.Error()))
		}
		w.Close()
		code <- c
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("serve printed no URL (exit %d): %s", <-code, s.stderr)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // nothing more is expected on stdout
	s.url = strings.TrimSpace(line)
	var once sync.Once
	exit := -1
	s.stop = func() int {
		once.Do(func() { cancel(); exit = <-code })
		return exit
	}
	t.Cleanup(func() { s.stop() })
	return s
}

// eventsStream connects to url with prefix and reads the events stream's
// configuration and message count.
func eventsStream(t *testing.T, url, prefix, creds string) (jetstream.StreamConfig, uint64, *bus.Conn) {
	t.Helper()
	c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: url, Prefix: prefix, CredsFile: creds}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s, err := c.JetStream().Stream(t.Context(), c.Names().Events)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.Config, info.State.Msgs, c
}

// serve --config creates the streams with the configured prefix and
// limits, as the server reports them. On a store whose stream exists, the
// defaults change nothing (a warning names the setting and both values)
// and limits a config file sets are applied, the events kept.
func TestServeConfigStreamLimits(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	writeConfig := func(name, doc string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := writeConfig("first.yaml", "nats:\n  prefix: tp\n  events_max_age: 3h\n  events_max_bytes: 5242880\n")
	s := startServe(t, "--listen", "127.0.0.1:0", "--store", store, "--config", first)
	cfg, _, c := eventsStream(t, s.url, "tp", bus.CredsPath(filepath.Join(store, "creds"), bus.RoleRequester))
	if cfg.MaxAge != 3*time.Hour || cfg.MaxBytes != 5<<20 || cfg.Subjects[0] != "tp.evt.>" {
		t.Errorf("created stream: max age %v, max bytes %d, subjects %v; want 3h, 5242880, tp.evt.>", cfg.MaxAge, cfg.MaxBytes, cfg.Subjects)
	}
	if _, err := c.JetStream().Publish(t.Context(), bus.EventSubject("tp", "r", "a", "x.y"), []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve exit %d: %s", code, s.stderr)
	}

	// Again on the same store with the prefix alone: the defaults leave the stream be.
	s = startServe(t, "--listen", "127.0.0.1:0", "--store", store, "--config", writeConfig("prefix.yaml", "nats:\n  prefix: tp\n"))
	s.stop()
	for _, want := range []string{"warning: stream TP_EVENTS keeps nats.events_max_age 3h: the configuration says 168h",
		"warning: stream TP_EVENTS keeps nats.events_max_bytes 5242880: the configuration says 1073741824"} {
		if !strings.Contains(s.stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, s.stderr)
		}
	}

	// With a config that sets one limit: that one is applied, the events kept.
	second := writeConfig("second.yaml", "nats:\n  prefix: tp\n  events_max_age: 2h\n")
	s = startServe(t, "--listen", "127.0.0.1:0", "--store", store, "--config", second)
	cfg, msgs, _ := eventsStream(t, s.url, "tp", bus.CredsPath(filepath.Join(store, "creds"), bus.RoleRequester))
	if cfg.MaxAge != 2*time.Hour || cfg.MaxBytes != 5<<20 || msgs != 1 {
		t.Errorf("after --config with events_max_age 2h: max age %v, max bytes %d, %d events; want 2h, 5242880, 1", cfg.MaxAge, cfg.MaxBytes, msgs)
	}
	if want := "stream TP_EVENTS: nats.events_max_age 2h applied (it was 3h)"; !strings.Contains(s.stderr.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, s.stderr)
	}
}

// A config that serve cannot use is a usage error naming the setting.
func TestServeConfigErrors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("nats:\n  events_max_age: -1h\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", p}, "nats.events_max_age"},
		{[]string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, "missing.yaml"},
	} {
		code, err := cmdServe(t.Context(), append(tc.args, "--listen", "127.0.0.1:0"), func(string) string { return "" }, io.Discard, io.Discard)
		if code != exitUsage || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: exit %d, %v; want a usage error naming %s", tc.args, code, err, tc.want)
		}
	}
}
