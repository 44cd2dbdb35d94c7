package bus

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestConnectOptionsSecrets(t *testing.T) {
	t.Parallel()
	creds := filepath.Join(t.TempDir(), "u.creds")
	const jwt = "eyJ0eXAiOiJKV1QiLCJhbGciOiJlZDI1NTE5LW5rZXkifQ.payload.sig"
	const seed = "SUAIBDPBAUTWCWBKIO6XHQNINK5FWJW4OHLXC3HQ2KFE4PEJUA44CNHTC4"
	body := "-----BEGIN NATS USER JWT-----\n" + jwt + "\n------END NATS USER JWT------\n\n" +
		"************************* IMPORTANT *************************\nNKEY Seed printed below can be used to sign and prove identity.\n\n" +
		"-----BEGIN USER NKEY SEED-----\n" + seed + "\n------END USER NKEY SEED------\n"
	if err := os.WriteFile(creds, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	o := ConnectOptions{Token: "tok-123456789", Password: "pw-123456789", CredsFile: creds,
		URLs: "nats://alice:url-pass-123@a:4222, nats://url-token-123@b:4222,nats://c:4222"}
	got := o.Secrets()
	for _, want := range []string{"tok-123456789", "pw-123456789", "url-pass-123", "url-token-123", jwt, seed} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %q", want, got)
		}
	}
	for _, not := range []string{"alice", "NKEY Seed printed below can be used to sign and prove identity."} {
		if slices.Contains(got, not) {
			t.Errorf("secrets hold %q", not)
		}
	}
	if s := (ConnectOptions{CredsFile: filepath.Join(t.TempDir(), "missing")}).Secrets(); len(s) != 2 {
		t.Errorf("a missing creds file: %q", s)
	}
}
