package watch

import "testing"

func TestShellFileOp(t *testing.T) {
	cases := []struct {
		cmd, tool string
	}{
		{"cat main.go", "read_file"},
		{"head -n 20 README.md", "read_file"},
		{"sed -n '10,40p' a.go", "read_file"},
		{"/usr/bin/tail -f log", "read_file"},
		{"grep -rn TODO .", "grep"},
		{"rg 'func main' | head", "grep"},
		{"find . -name '*.go'", "find_files"},
		{"ls -la", "list_dir"},
		{"cd src && ls", "list_dir"},
		{"cd 'my dir'; cat x", "read_file"},
		{"LC_ALL=C grep x y", "grep"},
		{"echo hello > out.txt", "write_file"},
		{"printf 'a\\n' >> log.txt", "write_file"},
		{"cat > f.txt <<'EOF'\nhi\nEOF", "write_file"},
		{"tee notes.md", "write_file"},
		{"go test ./...", ""},
		{"go test ./... | grep FAIL", ""},
		{"echo done", ""},
		{"echo oops >&2", ""},
		{"echo 'a > b'", ""},
		{"make build && ls bin", ""},
		{"", ""},
		{"FOO=1", ""},
		{"git grep x", ""},
		{"python3 -c 'print(1)' || cat err.log", ""},
	}
	for _, c := range cases {
		tool, ok := ShellFileOp(c.cmd)
		if tool != c.tool || ok != (c.tool != "") {
			t.Errorf("%q: %q %v, want %q", c.cmd, tool, ok, c.tool)
		}
	}
}

func FuzzShellFileOp(f *testing.F) {
	for _, s := range []string{"cat a", "cd x && ls", "echo 'a' > b", `a="b\"c" grep`, "x || y | z; w\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		tool, ok := ShellFileOp(cmd)
		if ok != (tool != "") {
			t.Fatalf("%q: %q %v", cmd, tool, ok)
		}
	})
}
