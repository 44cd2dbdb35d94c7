package tools

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A socket or a device in the workspace is never opened for reading:
// read_file and grep refuse it by name, saying what it is, and grep's
// walks (the tree, include naming it) pass over it.
func TestSocketsAndDevicesAreRefused(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	root := s.Workspace.Root()
	writeFile(t, s, "a.txt", "hello\n")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(root, "sock"), Net: "unix"})
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	special := map[string]string{"sock": "a socket"}
	// Devices as root only (CAP_MKNOD): /dev/null's and /dev/zero's
	// numbers, which would read as an empty and an endless file.
	for name, minor := range map[string]int{"null": 3, "zero": 5} {
		if err := syscall.Mknod(filepath.Join(root, name), syscall.S_IFCHR|0o666, 1<<8|minor); err != nil {
			t.Logf("mknod %s: %v (devices not tested)", name, err)
			continue
		}
		special[name] = "a character device"
	}
	for name, kind := range special {
		for _, c := range []struct {
			tool Tool
			args string
			want string
		}{
			{ReadFile(), `{"path":"` + name + `"}`, name + " is " + kind + ", not a regular file"},
			{Grep(), `{"pattern":"hello","path":"` + name + `"}`, name + " is " + kind + ", not a regular file"},
			{Grep(), `{"pattern":"hello","include":"` + name + `"}`, "No matches for hello"},
			{Grep(), `{"pattern":".","include":"` + name + `","mode":"content"}`, "No matches for ."},
		} {
			if r := runTool(t, c.tool, s, c.args); !strings.Contains(r.Text, c.want) {
				t.Errorf("%s %s: %q, want %q", c.tool.Spec().Name, c.args, r.Text, c.want)
			}
		}
	}
	r := runTool(t, Grep(), s, `{"pattern":".","mode":"content"}`)
	if r.Text != "a.txt:1: hello" {
		t.Errorf("grep over the tree: %q, want a.txt's line alone", r.Text)
	}
	// The host's devices are outside the workspace, whatever the path.
	if err := os.Symlink("/dev/zero", filepath.Join(root, "devzero")); err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"path":"devzero"}`, `{"path":"/dev/zero"}`} {
		if r := runTool(t, ReadFile(), s, args); !r.IsError || !strings.Contains(r.Text, "outside the workspace") {
			t.Errorf("read_file %s: %q", args, r.Text)
		}
	}
}
