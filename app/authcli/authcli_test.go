package authcli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
)

// init, a node of its own, list, revoke (no server told) and revoke
// again, on real key material.
func TestInitNodeListRevoke(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	var out, errb strings.Builder
	if err := Init(dir, "troupe", &out, &errb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "server.conf")); err != nil || !strings.Contains(errb.String(), "nats-server -js -c ") {
		t.Fatalf("init: %v\n%s", err, errb.String())
	}
	if _, err := Open("", "auth list"); !errors.Is(err, runner.ErrUsage) || !strings.Contains(err.Error(), "auth list needs --dir DIR") {
		t.Errorf("no --dir: %v", err)
	}
	a, err := Open(dir, "auth node")
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := Node(a, "gpu-1", []string{"worker"}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(strings.TrimSpace(out.String())); err != nil {
		t.Fatalf("the node's creds file: %v", err)
	}
	out.Reset()
	if err := List(a, &out); err != nil || !strings.Contains(out.String(), "gpu-1") || !strings.Contains(out.String(), "worker") {
		t.Fatalf("list: %v\n%s", err, out.String())
	}
	for range 2 { // revoked, then revoked already: said again
		out.Reset()
		errb.Reset()
		if err := Revoke(t.Context(), a, "gpu-1", config.NATS{}, "", "", &out, &errb); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "gpu-1 ") || !strings.Contains(errb.String(), "no server told") {
			t.Errorf("revoke:\n%s%s", out.String(), errb.String())
		}
	}
	if err := Revoke(t.Context(), a, "nobody", config.NATS{}, "", "", &out, &errb); !errors.Is(err, runner.ErrUsage) {
		t.Errorf("an unknown name: %v", err)
	}
	out.Reset()
	if err := List(a, &out); err != nil || !strings.Contains(out.String(), "revoked ") {
		t.Errorf("list after revoke: %v\n%s", err, out.String())
	}
}
