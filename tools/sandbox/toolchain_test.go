//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// goEnv is a value of `go env`.
func goEnv(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		t.Fatalf("go env %s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// go build and git commit work in the workspace under the default rules,
// with the Go build and module caches listed as writable (as a user lists
// them in sandbox.writable).
func TestGoBuildAndGitCommit(t *testing.T) {
	needKernel(t)
	peer.Need(t, "go")
	peer.Need(t, "git")
	b := newBox(t)
	pol := b.pol
	pol.Writable = append(pol.Writable, goEnv(t, "GOCACHE"), goEnv(t, "GOMODCACHE"))
	files := map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.22\n",
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from the sandbox\") }\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(b.ws, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := `set -e
go build -o hello . && ./hello
git init -q && git add . && git -c user.name=t -c user.email=t@example.com commit -qm first && git log --oneline | wc -l`
	out, code := b.run(t, pol, []string{"GOCACHE=" + goEnv(t, "GOCACHE"), "GOMODCACHE=" + goEnv(t, "GOMODCACHE"),
		"GOTOOLCHAIN=local", "GOFLAGS=-buildvcs=false"}, "sh", "-c", script)
	if code != 0 || !strings.Contains(out, "hello from the sandbox") || !strings.HasSuffix(strings.TrimSpace(out), "1") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
