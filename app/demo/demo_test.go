package demo

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/runner"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The demo runs a real team offline and says the model is scripted.
func TestDemo(t *testing.T) {
	ws := t.TempDir()
	var out, errb bytes.Buffer
	ok, err := Run(t.Context(), Options{Workspace: ws, InPlace: true}, &out, &errb)
	if err != nil || !ok {
		t.Fatalf("completed %v, %v\n%s", ok, err, errb.String())
	}
	if !strings.HasPrefix(out.String(), "Done. Discounts are applied in one place") {
		t.Errorf("stdout %q", out.String())
	}
	for _, want := range []string{"MODEL IS SCRIPTED", "spawned explore", "spawned planner", "spawned worker", "plan accepted", "whole run: 7 agents"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(ws, "discount.go"))
	if err != nil || !strings.Contains(string(b), "percent = min(max(percent, 0), 100)") {
		t.Errorf("the worker's edit is missing: %s", b)
	}
}

// treeDigest lists every file under dir with its mode and contents.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s %v %d\n", rel, info.Mode(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%x\n", sha256.Sum256(data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// demo --workspace on an existing directory works on a copy: the directory
// is left byte for byte as it was, even where the sample repository has a
// file of the same name (go.mod).
func TestDemoWorkspaceLeftUnchanged(t *testing.T) {
	ws := t.TempDir()
	for name, body := range map[string]string{"go.mod": "module mine\n", "main.go": "package main\n", "sub/notes.txt": "keep\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	before := treeDigest(t, ws)
	var out, errb bytes.Buffer
	ok, err := Run(t.Context(), Options{Workspace: ws}, &out, &errb)
	if err != nil || !ok {
		t.Fatalf("completed %v, %v\n%s", ok, err, errb.String())
	}
	if after := treeDigest(t, ws); after != before {
		t.Errorf("the workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if !strings.Contains(errb.String(), "working on a copy of") || !strings.Contains(errb.String(), "go.mod exists in the workspace") {
		t.Errorf("stderr:\n%s", errb.String())
	}
	// The copy went, and the state directory its runs made with it.
	m := regexp.MustCompile(`working on a copy of \S+ in (\S+);`).FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no copy named:\n%s", errb.String())
	}
	for _, gone := range []string{m[1], stateDirOf(t, m[1])} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is left: %v", gone, err)
		}
	}
}

// --in-place never changes a file the demo did not create: in a
// directory holding the sample's discount.go (the file its scripted worker
// edits, with the very text the edit replaces) it refuses to run, exit 2,
// and the directory is left byte for byte as it was.
func TestDemoInPlaceRefusesUserFiles(t *testing.T) {
	sample, err := demoFS.ReadFile("sample/repo/discount.go.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sample), "func ApplyDiscount(total, percent int) int {\n") {
		t.Fatal("the sample's discount.go no longer holds the text the scripted edit replaces; fix this test")
	}
	ws := t.TempDir()
	mine := "// Mine, not the demo's.\n" + string(sample)
	for name, body := range map[string]string{"discount.go": mine, "go.mod": "module mine\n", "notes.txt": "keep\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := treeDigest(t, ws)
	var out, errb bytes.Buffer
	ok, err := Run(t.Context(), Options{Workspace: ws, InPlace: true}, &out, &errb)
	if ok || !errors.Is(err, runner.ErrUsage) {
		t.Fatalf("completed %v, err %v (want a usage error)\n%s", ok, err, errb.String())
	}
	for _, want := range []string{"demo --in-place: " + ws + " already has discount.go, go.mod: ", "nothing was changed", "leave out --in-place to work on a copy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if after := treeDigest(t, ws); after != before {
		t.Errorf("the workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	// Without --in-place the demo works on a copy, edits the copy's
	// discount.go, and leaves the directory as it was.
	out.Reset()
	errb.Reset()
	if ok, err := Run(t.Context(), Options{Workspace: ws}, &out, &errb); err != nil || !ok {
		t.Fatalf("on a copy: completed %v, %v\n%s", ok, err, errb.String())
	}
	if after := treeDigest(t, ws); after != before {
		t.Errorf("the workspace changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestDemoMissingWorkspace(t *testing.T) {
	var out, errb bytes.Buffer
	ok, err := Run(t.Context(), Options{Workspace: filepath.Join(t.TempDir(), "nope")}, &out, &errb)
	if ok || !errors.Is(err, runner.ErrUsage) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("completed %v, err %v", ok, err)
	}
}

func stateDirOf(t testing.TB, ws string) string {
	t.Helper()
	dir, err := actors.StateDir(ws)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}
