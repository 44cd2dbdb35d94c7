package sandbox

import (
	"os"
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	p := Policy{Writable: []string{"/ws"}, DenyRead: []string{"/h/.ssh"}, Network: NetworkDeny}
	cases := []struct {
		code int
		out  string
		want string
	}{
		{1, "sh: 1: cannot create /tmp/x: Permission denied", "writes are allowed only beneath /ws"},
		{1, "connect: Network is unreachable", "network is deny"},
		{1, "ptrace: operation not permitted", "ptrace, mount"},
		{0, "Permission denied", ""},
		{2, "no such file", ""},
	}
	for _, c := range cases {
		got := Explain(c.code, c.out, p)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("Explain(%d, %q) = %q, want %q", c.code, c.out, got, c.want)
		}
	}
}

func TestTempDir(t *testing.T) {
	dir, remove, err := TempDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/f", []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("still there: %v", err)
	}
}
