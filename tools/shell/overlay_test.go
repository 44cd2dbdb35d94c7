//go:build linux

package shell

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/overlay"
	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/sandbox"
)

// overlayTree is a real overlay mount in the process's holder, as an
// overlay worktree is: lower holds lower.txt, writes go to up, and the
// session's tools reach the merged view as a view root while its
// commands enter the holder's namespaces at mnt.
type overlayTree struct {
	lower, up, mnt string
	s              *tools.Session
}

func newOverlayTree(t *testing.T, box func(inside string) *sandbox.Box) overlayTree {
	t.Helper()
	h, err := overlay.Shared(filepath.Join(os.TempDir(), "troupe-shell-overlay-test"))
	if err != nil {
		peer.Missing(t, "overlay mounts", "%v", err)
	}
	base := t.TempDir()
	o := overlayTree{lower: filepath.Join(base, "lower"), up: filepath.Join(base, "up"), mnt: filepath.Join(base, "mnt")}
	for _, d := range []string{o.lower, o.up, o.mnt, filepath.Join(base, "work")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(o.lower, "lower.txt"), []byte("from the lower tree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(o.lower, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.lower, ".git", "config"), []byte("[core]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mounted, err := h.Mount(base, "lower", "up", "work", "mnt")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Unmount(mounted); _ = mounted.Close() })
	ws, err := tools.NewWorkspaceView(h.View(o.mnt), tools.View{Inside: o.mnt, Enter: func(dir string) []string {
		pre, err := h.Enter(dir)
		if err != nil {
			t.Error(err)
		}
		return pre
	}})
	if err != nil {
		t.Fatal(err)
	}
	o.s = tools.NewSession("ovl", ws, tools.Config{DataDir: t.TempDir(), StateDir: t.TempDir()})
	if box != nil {
		UseSandbox(o.s, box(ws.CommandRoot()))
	}
	t.Cleanup(func() { _ = o.s.Close() })
	return o
}

// A command and the file tools see one tree: what the shell writes the
// tools read and the other way round, in the overlay's upper directory
// (never the lower one, nor the empty mount point in this namespace);
// commands start at the view's root or working_dir as the commands see
// it, one-shot, session and background job alike.
func TestOverlayShellAndToolsSeeOneTree(t *testing.T) {
	o := newOverlayTree(t, nil)
	ws := o.s.Workspace
	// By its absolute path too: a command that only had its working
	// directory in the view would find an empty directory there.
	r := shellCall(t.Context(), t, o.s, map[string]any{"command": "cat " + o.mnt + "/lower.txt && mkdir sub && echo from the shell > " + o.mnt + "/sub/made.txt && pwd"})
	if r.IsError || !strings.Contains(r.Text, "from the lower tree\n"+o.mnt+"\n") {
		t.Fatalf("shell: %q", r.Text)
	}
	abs, err := ws.Resolve("sub/made.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ws.ReadFile(abs); err != nil || string(b) != "from the shell\n" {
		t.Fatalf("the tools read %q, %v", b, err)
	}
	tool, err := ws.Resolve(filepath.Join(o.mnt, "sub", "tool.txt")) // the path the commands see works too
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.WriteAtomic(tool, []byte("from the tools\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = shellCall(t.Context(), t, o.s, map[string]any{"command": "cat tool.txt && pwd", "working_dir": "sub"})
	if r.IsError || !strings.Contains(r.Text, "from the tools\n"+filepath.Join(o.mnt, "sub")+"\n") {
		t.Fatalf("shell in sub: %q", r.Text)
	}
	r = shellCall(t.Context(), t, o.s, map[string]any{"command": "cd sub && cat made.txt", "session": "dev"})
	if r.IsError || !strings.Contains(r.Text, "from the shell") {
		t.Fatalf("session: %q", r.Text)
	}
	r = shellCall(t.Context(), t, o.s, map[string]any{"command": "pwd", "session": "dev"})
	if !strings.Contains(r.Text, filepath.Join(o.mnt, "sub")+"\n") || strings.Contains(r.Text, "reset to the workspace root") {
		t.Fatalf("session's directory: %q", r.Text)
	}
	id := startTestJob(t, o.s, "cat sub/tool.txt; echo job done")
	if out, _ := readJobUntil(t, o.s, id, "job done"); !strings.Contains(out, "from the tools") {
		t.Fatalf("job: %q", out)
	}
	for _, f := range []string{"sub/made.txt", "sub/tool.txt"} {
		if _, err := os.Stat(filepath.Join(o.up, f)); err != nil {
			t.Errorf("%s is not in the upper directory: %v", f, err)
		}
		if _, err := os.Stat(filepath.Join(o.lower, f)); err == nil {
			t.Errorf("%s reached the lower tree", f)
		}
	}
	if ents, err := os.ReadDir(o.mnt); err != nil || len(ents) != 0 {
		t.Errorf("the mount point in this namespace: %v %v", ents, err)
	}
}

// The sandbox holds inside an overlay: commands enter first and are
// confined after, so a write outside the tree is refused, the network is
// refused, no secret of ours is in their environment, .git stays
// read-only, and writes inside, new entries at the tree's top among
// them, land in the upper directory.
func TestOverlaySandboxHolds(t *testing.T) {
	sup := sandbox.Check()
	if sup.LandlockABI == 0 {
		peer.Missing(t, "Landlock", "the sandbox tests need a kernel with Landlock")
	}
	o := newOverlayTree(t, func(inside string) *sandbox.Box {
		return sandbox.NewBox(sandbox.Policy{Writable: []string{inside}, ReadOnly: []string{filepath.Join(inside, ".git")},
			Network: sandbox.NetworkDeny}, sup, t.TempDir())
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "REACHED") }))
	}()
	peer.Need(t, "curl")
	t.Setenv("OVERLAY_TEST_API_KEY", "s3cret-value")
	outside := filepath.Join(t.TempDir(), "escaped")
	cmd := "echo in > inside.txt; mkdir -p made/sub; echo x >> .git/config; echo git=$?; echo x > " + outside + "; curl -s -m 20 http://127.0.0.1:" + portOf(l) + "/; echo curl=$?; env; echo end"
	for _, args := range []map[string]any{{"command": cmd}, {"command": cmd, "session": "s"}} {
		r := shellCall(t.Context(), t, o.s, args)
		if !strings.Contains(r.Text, "Permission denied") || strings.Contains(r.Text, "REACHED") || !strings.Contains(r.Text, "curl=7") ||
			!strings.Contains(r.Text, "git=1") || !strings.Contains(r.Text, "end") {
			t.Errorf("%v: %q", args, r.Text)
		}
		for _, leak := range []string{"s3cret-value", "TROUPE_SANDBOX"} {
			if strings.Contains(r.Text, leak) {
				t.Errorf("%v: the environment holds %s: %q", args, leak, r.Text)
			}
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("a write outside the tree went through")
	}
	if b, err := os.ReadFile(filepath.Join(o.up, "inside.txt")); err != nil || string(b) != "in\n" {
		t.Errorf("the write inside: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(o.up, "made", "sub")); err != nil || !fi.IsDir() {
		t.Errorf("the directory made at the top: %v", err)
	}
	if _, err := os.Stat(filepath.Join(o.up, ".git", "config")); err == nil {
		t.Error("a write to .git/config went through")
	}
}

func portOf(l net.Listener) string {
	_, p, _ := net.SplitHostPort(l.Addr().String())
	return p
}
