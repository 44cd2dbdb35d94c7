package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"
	"github.com/troupe-ai/troupe/bus"
)

// An unauthenticated serve beyond loopback is refused with a sentence
// saying why, before it listens.
func TestServeNoAuthOnlyOnLoopback(t *testing.T) {
	var out, errb bytes.Buffer
	env := map[string]string{"HOME": t.TempDir()}
	code, err := cmdServe(t.Context(), []string{"--listen", "0.0.0.0:0", "--no-auth", "--ephemeral"},
		func(k string) string { return env[k] }, &out, &errb)
	if code != exitUsage || err == nil || !strings.Contains(err.Error(), "--no-auth on 0.0.0.0 refused") || out.Len() != 0 {
		t.Fatalf("exit %d, err %v, stdout %q", code, err, out.String())
	}
	for _, h := range []string{"127.0.0.1", "::1", "localhost"} {
		if checkNoAuth(h) != nil {
			t.Errorf("%s refused", h)
		}
	}
}

// auth init writes the key material, the server snippet, the creds
// files (a node's own for the first node, no shared node.creds) and the
// HTTP token, private; a second init keeps the keys and the token.
func TestAuthInit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	env := map[string]string{"HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	var out, errb bytes.Buffer
	if code, err := cmdAuth(t.Context(), []string{"init", dir}, getenv, &out, &errb); code != exitOK || err != nil {
		t.Fatalf("exit %d: %v", code, err)
	}
	conf, err := os.ReadFile(filepath.Join(dir, bus.ServerConfigFile))
	if err != nil || !strings.Contains(string(conf), "resolver: MEMORY") || !strings.Contains(string(conf), "operator: ") {
		t.Fatalf("server.conf: %v\n%s", err, conf)
	}
	account, _ := os.ReadFile(filepath.Join(dir, "account.nk"))
	kp, err := nkeys.FromSeed(bytes.TrimSpace(account))
	if err != nil {
		t.Fatal(err)
	}
	if pub, _ := kp.PublicKey(); !strings.Contains(errb.String(), "account:  "+pub) {
		t.Errorf("auth init does not name the account %s:\n%s", pub, errb.String())
	}
	for _, p := range []string{bus.CredsPath(dir, bus.RoleRequester), bus.CredsPath(dir, bus.RoleWatcher), filepath.Join(dir, "nodes", bus.FirstNode+".creds")} {
		if !strings.Contains(errb.String(), p) {
			t.Errorf("auth init does not say where %s is:\n%s", p, errb.String())
		}
		if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(bus.CredsPath(dir, bus.RoleNode)); err == nil {
		t.Error("a new folder has a shared node.creds")
	}
	token := filepath.Join(dir, "http.token")
	tok, err := os.ReadFile(token)
	if st, serr := os.Stat(token); err != nil || serr != nil || st.Mode().Perm() != 0o600 || len(tok) < 32 || !strings.Contains(errb.String(), token) {
		t.Errorf("the HTTP token %s: %v, %q; want 0600 and named", token, err, tok)
	}
	if code, err := cmdAuth(t.Context(), []string{"init", dir}, getenv, &out, &errb); code != exitOK || err != nil {
		t.Fatalf("second init: exit %d: %v", code, err)
	}
	if again, _ := os.ReadFile(token); !bytes.Equal(tok, again) {
		t.Error("a second init changed the HTTP token")
	}
	again, _ := os.ReadFile(filepath.Join(dir, "account.nk"))
	if len(account) == 0 || !bytes.Equal(account, again) {
		t.Fatal("a second init changed the account key")
	}
	if code, _ := cmdAuth(t.Context(), []string{"init"}, getenv, &out, &errb); code != exitUsage {
		t.Fatalf("auth init without DIR: exit %d", code)
	}
}
