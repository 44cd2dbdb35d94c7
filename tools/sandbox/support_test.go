//go:build linux

package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A kernel without Landlock (simulated through the test hook): the
// preflight warns naming it, a required policy is refused, and the
// launcher, told Landlock is absent, starts the command without it, so a
// write outside the workspace goes through, as the warning says.
func TestSimulatedKernelWithoutLandlock(t *testing.T) {
	needKernel(t)
	t.Setenv(AssumeMissingEnv, "landlock")
	s := Check()
	if s.LandlockABI != 0 {
		t.Fatalf("hook ignored: %+v", s)
	}
	b := newBox(t)
	warn, err := s.Preflight(b.pol)
	if err != nil || !strings.Contains(warn, "Landlock (writes outside the workspace") {
		t.Errorf("warning %q, err %v", warn, err)
	}
	target := filepath.Join(b.outside, "unconfined")
	if out, code := b.sh(t, "echo x > "+target); code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("the write did not happen: %v", err)
	}
	req := b.pol
	req.Required = true
	if _, err := s.Preflight(req); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "Landlock") {
		t.Errorf("required: %v", err)
	}
	if err := Confine(exec.Command("true"), req, s); !errors.Is(err, ErrUnsupported) {
		t.Errorf("confine of a required policy: %v", err)
	}
}

func TestMissing(t *testing.T) {
	full := Support{LandlockABI: 7, Seccomp: true, UserNS: true, NetNS: true}
	if m := full.Missing(Policy{Network: NetworkDeny}); len(m) != 0 {
		t.Errorf("full support misses %v", m)
	}
	noNS := full
	noNS.NetNS, noNS.UserNS = false, false
	if m := noNS.Missing(Policy{Network: NetworkLoopback}); len(m) != 1 || !strings.Contains(m[0], "loopback") {
		t.Errorf("loopback without netns: %v", m)
	}
	if m := noNS.Missing(Policy{Network: NetworkAllow}); len(m) != 0 {
		t.Errorf("allow needs no namespace: %v", m)
	}
	if m := (Support{}).Missing(Policy{Network: NetworkDeny}); len(m) != 3 {
		t.Errorf("nothing supported: %v", m)
	}
}

func TestWithin(t *testing.T) {
	outer := Policy{Writable: []string{"/w"}, DenyRead: []string{"/h/.ssh"}, Network: NetworkLoopback}
	got, err := Policy{Writable: []string{"/w/task"}, Network: NetworkDeny}.Within(outer)
	if err != nil || got.Network != NetworkDeny || len(got.DenyRead) != 1 || got.Writable[0] != "/w/task" {
		t.Errorf("tighten: %+v %v", got, err)
	}
	for _, wider := range []Policy{
		{Writable: []string{"/elsewhere"}, Network: NetworkDeny},
		{Writable: []string{"/w"}, Network: NetworkAllow},
		{Writable: []string{"/wx"}, Network: NetworkDeny},
	} {
		if _, err := wider.Within(outer); !errors.Is(err, ErrWiden) {
			t.Errorf("%+v: %v", wider, err)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, bad := range []Policy{{Network: "open"}, {Writable: []string{"rel"}}, {DenyRead: []string{"~/.ssh"}}} {
		if err := bad.Validate(); !errors.Is(err, ErrBadPolicy) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if got := ExpandHome([]string{"~", "~/.ssh", "/x"}, "/h"); strings.Join(got, ",") != "/h,/h/.ssh,/x" {
		t.Errorf("ExpandHome: %v", got)
	}
}

// readGrants splits the grant around denied paths: siblings and their
// trees are granted, the denied path and its ancestors are not, a
// symlink to a denied tree is not.
func TestReadGrants(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	for _, d := range []string{".ssh", ".config/gcloud", ".config/other", "src"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "keys")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, "src"), filepath.Join(home, "code")); err != nil {
		t.Fatal(err)
	}
	got := readGrants([]string{filepath.Join(home, ".ssh"), filepath.Join(home, ".config/gcloud")})
	has := map[string]bool{}
	for _, g := range got {
		has[g] = true
	}
	for _, want := range []string{"/usr", filepath.Join(home, "src"), filepath.Join(home, "code"), filepath.Join(home, ".config/other")} {
		if !has[want] {
			t.Errorf("%s not granted", want)
		}
	}
	for _, not := range []string{"/", root, home, filepath.Join(home, ".ssh"), filepath.Join(home, "keys"),
		filepath.Join(home, ".config"), filepath.Join(home, ".config/gcloud")} {
		if has[not] {
			t.Errorf("%s granted", not)
		}
	}
	if g := readGrants(nil); len(g) != 1 || g[0] != "/" {
		t.Errorf("no denial: %v", g)
	}
}
