package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
)

// authCmd runs `orchestrator auth args...` and returns its exit code,
// stdout and stderr.
func authCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := map[string]string{"HOME": t.TempDir()}
	code, err := cmdAuth(t.Context(), args, func(k string) string { return env[k] }, &out, &errb)
	if err != nil {
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

// serve --store issues the first node its own credentials; auth node
// issues another, auth list shows them, auth revoke shuts one out at
// once (pushed to serve's server), and serve started again keeps it out.
func TestAuthNodeListRevokeOnServe(t *testing.T) {
	store := t.TempDir()
	s := startServe(t, "--listen", "127.0.0.1:0", "--store", store)
	dir := filepath.Join(store, "creds")
	first := filepath.Join(dir, "nodes", bus.FirstNode+".creds")
	pollUntil(t, "the banner", func() bool { return strings.Contains(s.stderr.String(), "--creds "+first) })

	code, out, errs := authCmd(t, "node", "builder-2", "--dir", dir, "--kinds", "explore")
	path := strings.TrimSpace(out)
	if code != exitOK || path != filepath.Join(dir, "nodes", "builder-2.creds") {
		t.Fatalf("auth node: exit %d, %q\n%s", code, out, errs)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v", path, err)
	}
	connect := func(creds string) (*bus.Conn, error) {
		return bus.Connect(t.Context(), bus.ConnectOptions{URLs: s.url, CredsFile: creds}, zerolog.Nop())
	}
	c, err := connect(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id := c.Identity(); id.Role != bus.RoleNode || id.Node != "builder-2" {
		t.Fatalf("identity %+v", id)
	}
	empty := t.TempDir()
	for _, bad := range [][]string{{"node", "bad.name", "--dir", dir}, {"node", "watcher", "--dir", dir}, {"node", "x"},
		{"node", "x", "--dir", empty}, {"revoke", "nobody", "--dir", dir}, {"list", "extra", "--dir", dir}, {"frobnicate"}} {
		if code, _, _ := authCmd(t, bad...); code != exitUsage {
			t.Errorf("auth %v: exit %d, want %d", bad, code, exitUsage)
		}
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Errorf("auth node --dir of an empty folder made key material there: %v", entries)
	}

	_, list, _ := authCmd(t, "list", "--dir", dir)
	for _, want := range []string{"requester ", "watcher ", bus.FirstNode + " ", "builder-2 "} {
		if !strings.Contains(list, "\n"+want) {
			t.Errorf("auth list lacks %q:\n%s", want, list)
		}
	}
	if !strings.Contains(list, "explore") {
		t.Errorf("auth list does not show builder-2's kinds:\n%s", list)
	}

	if code, out, errs := authCmd(t, "revoke", "builder-2", "--dir", dir, "--nats", s.url); code != exitOK || !strings.Contains(out, "builder-2") {
		t.Fatalf("auth revoke: exit %d %q\n%s", code, out, errs)
	}
	select {
	case <-c.Closed():
	case <-time.After(30 * time.Second):
		t.Fatal("the revoked node's connection stayed open")
	}
	if _, list, _ = authCmd(t, "list", "--dir", dir); !strings.Contains(list, "revoked") {
		t.Errorf("auth list after the revocation:\n%s", list)
	}
	if code, _, errs := authCmd(t, "revoke", "builder-2", "--dir", dir, "--nats", s.url); code != exitOK {
		t.Errorf("revoking again (pushes again): exit %d\n%s", code, errs)
	}
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d", code)
	}

	// Serve again on the same store: still refused; the first node still in.
	again := startServe(t, "--listen", "127.0.0.1:0", "--store", store)
	if c, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: again.url, CredsFile: path}, zerolog.Nop()); err == nil {
		c.Close()
		t.Fatal("a revoked node connected to serve started again")
	}
	c2, err := bus.Connect(t.Context(), bus.ConnectOptions{URLs: again.url, CredsFile: first}, zerolog.Nop())
	if err != nil {
		t.Fatalf("the first node after serve started again: %v", err)
	}
	c2.Close()
}
