package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkFileTools measures one call of each file tool through the
// executor on a small tree (200 files in 10 folders, three levels down),
// so that the cost of confinement (every open beneath the workspace root)
// shows next to the executor's own overhead. Cached reads are avoided: the
// session's cache is dropped before each read-only call.
func BenchmarkFileTools(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	for d := range 10 {
		dir := filepath.Join(ws.Root(), "src", "pkg", fmt.Sprintf("d%d", d))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 20 {
			body := fmt.Sprintf("package d%d\n\n// F%d is file %d.\nfunc F%d() int { return %d }\n", d, f, f, f, f)
			if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", f)), []byte(body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	s := NewSession("bench", ws, Config{DataDir: b.TempDir()})
	ex := &Executor{Tools: NewRegistry(fileTools()...), Session: s}
	run := func(b *testing.B, name, args string) {
		b.Helper()
		r := ex.Run(context.Background(), calls(name, args))[0]
		if r.IsError {
			b.Fatalf("%s %s: %s", name, args, r.Text)
		}
	}
	fresh := func() { s.Cache = NewCache(0) }
	b.Run("read_file", func(b *testing.B) {
		for b.Loop() {
			fresh()
			run(b, "read_file", `{"path":"src/pkg/d3/f7.go"}`)
		}
	})
	b.Run("write_file", func(b *testing.B) {
		for b.Loop() {
			run(b, "write_file", `{"path":"src/pkg/d3/new.go","content":"package d3\n"}`)
		}
	})
	edits := 0 // b.Run may run the function more than once: count across runs
	b.Run("edit_file", func(b *testing.B) {
		run(b, "read_file", `{"path":"src/pkg/d4/f1.go"}`)
		for b.Loop() {
			old, repl := "return 1 }", "return 2 }"
			if edits%2 == 1 {
				old, repl = repl, old
			}
			edits++
			run(b, "edit_file", fmt.Sprintf(`{"path":"src/pkg/d4/f1.go","old_string":%q,"new_string":%q}`, old, repl))
		}
	})
	b.Run("grep_content", func(b *testing.B) {
		for b.Loop() {
			fresh()
			run(b, "grep", `{"pattern":"return 7","mode":"content"}`)
		}
	})
	b.Run("find_files", func(b *testing.B) {
		for b.Loop() {
			fresh()
			run(b, "find_files", `{"pattern":"f1*.go"}`)
		}
	})
	b.Run("list_dir", func(b *testing.B) {
		for b.Loop() {
			fresh()
			run(b, "list_dir", `{"path":"src/pkg","depth":2,"limit":300}`)
		}
	})
}

// BenchmarkWorkspaceOpen compares opening a file three folders down by its
// path (what the tools did before) with opening it beneath the root held
// open (what they do now), each with the fstat that follows.
func BenchmarkWorkspaceOpen(b *testing.B) {
	ws, err := NewWorkspace(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	abs := filepath.Join(ws.Root(), "src", "pkg", "d3", "f.go")
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(abs, []byte("package d3\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("by-path", func(b *testing.B) {
		for b.Loop() {
			f, err := os.Open(abs)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Stat(); err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("beneath-root", func(b *testing.B) {
		for b.Loop() {
			f, _, err := ws.open(abs)
			if err != nil {
				b.Fatal(err)
			}
			f.Close()
		}
	})
	b.Run("resolve", func(b *testing.B) {
		for b.Loop() {
			if _, err := ws.Resolve("src/pkg/d3/f.go"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// fileTools are the file and search tools of this package.
func fileTools() []Tool {
	return []Tool{ReadFile(), EditFile(), WriteFile(), ListDir(), Think(), Todo(), Grep(), FindFiles()}
}
