package tests

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Size limits of the code outside tests: a file is read in one sitting, a
// function on one screen or two. A command's function (cmdRun, cmdWatch...
// in cmd/) reads as parse, load, build, run, exit code, and a program's
// package as a whole stays thin: what it builds lives in packages of its
// own (app/...), tested there.
const (
	maxFileLines    = 450
	maxFuncLines    = 100
	maxCommandLines = 60
	maxProgramLines = 2000
)

// isCommand reports whether fd is a command's function in a program under
// cmd/: a top-level function named cmd followed by an upper-case letter.
func isCommand(rel string, fd *ast.FuncDecl) bool {
	n := fd.Name.Name
	return strings.HasPrefix(rel, "cmd/") && fd.Recv == nil && len(n) > 3 && strings.HasPrefix(n, "cmd") &&
		n[3] >= 'A' && n[3] <= 'Z'
}

// sizeProblems returns each non-test .go file under root longer than
// maxFileLines and each function or method longer than maxFuncLines (a
// command's function longer than maxCommandLines), as "file: N lines" and
// "file:func: N lines", file relative to root.
func sizeProblems(root string) ([]string, error) {
	var out []string
	fset := token.NewFileSet()
	err := goFiles(root, func(path, rel string) error {
		if strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			out = append(out, fmt.Sprintf("%s: %d lines (at most %d)", rel, n, maxFileLines))
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			limit := maxFuncLines
			if isCommand(rel, fd) {
				limit = maxCommandLines
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > limit {
				out = append(out, fmt.Sprintf("%s:%s: %d lines (at most %d)", rel, funcName(fd), n, limit))
			}
		}
		return nil
	})
	return out, err
}

// funcName is a function's name, or Type.Method for a method.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}

// No non-test file is over 450 lines, no function outside tests over 100
// and no command's function over 60; each offender is named with its file, function and length.
func TestStructure(t *testing.T) {
	problems, err := sizeProblems("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// The check finds a long file, a long function (a method of a generic
// type included) and a long command and names them; test files and short
// code pass.
func TestStructureCatchesOffenders(t *testing.T) {
	dir := t.TempDir()
	long := func(n int) string { return strings.Repeat("\tx++\n", n) }
	files := map[string]string{
		"a/ok.go":      "package a\n\nfunc short() {\n" + long(10) + "}\n",
		"a/big.go":     "package a\n\nvar x int\n" + strings.Repeat("// line\n", 460),
		"a/fn.go":      "package a\n\nfunc huge() {\n" + long(100) + "}\n",
		"a/m.go":       "package a\n\ntype T[E any] struct{}\n\nfunc (t *T[E]) Method() {\n" + long(99) + "}\n",
		"a/fn_test.go": "package a\n\nfunc hugeTest() {\n" + long(600) + "}\n",
		"cmd/p/ok.go":  "package main\n\nfunc cmdShort() {\n" + long(58) + "}\n\nfunc cmdline() {\n" + long(70) + "}\n",
		"cmd/p/run.go": "package main\n\nfunc cmdRun() {\n" + long(59) + "}\n",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := writeFile(p, body); err != nil {
			t.Fatal(err)
		}
	}
	got, err := sizeProblems(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a/big.go: 463 lines (at most 450)", "a/fn.go:huge: 102 lines (at most 100)", "a/m.go:T.Method: 101 lines (at most 100)",
		"cmd/p/run.go:cmdRun: 61 lines (at most 60)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func writeFile(path, body string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(body), 0o644)
}

// goFiles calls fn for each .go file under root (hidden folders, testdata
// and node_modules left out), with its path relative to root.
func goFiles(root string, fn func(path, rel string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return fn(path, filepath.ToSlash(rel))
	})
}

// programProblems returns each program's package (a folder right under
// cmd/) whose non-test .go files hold more than maxProgramLines lines in
// all, as "cmd/p: N lines".
func programProblems(root string) ([]string, error) {
	lines := map[string]int{}
	err := goFiles(root, func(path, rel string) error {
		parts := strings.Split(rel, "/")
		if len(parts) != 3 || parts[0] != "cmd" || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines["cmd/"+parts[1]] += strings.Count(string(b), "\n")
		return nil
	})
	var out []string
	for _, p := range slices.Sorted(maps.Keys(lines)) {
		if lines[p] > maxProgramLines {
			out = append(out, fmt.Sprintf("%s: %d lines (at most %d): move what it builds to a package of its own", p, lines[p], maxProgramLines))
		}
	}
	return out, err
}

// undocumented returns each package folder under root none of whose files
// has a package comment: its non-test files, or its test files where it
// has no other (tests/e2e).
func undocumented(root string) ([]string, error) {
	type pkg struct{ code, documented, testDocumented bool }
	pkgs := map[string]*pkg{}
	fset := token.NewFileSet()
	err := goFiles(root, func(path, rel string) error {
		f, err := parser.ParseFile(fset, path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.ToSlash(filepath.Dir(rel))
		p := pkgs[dir]
		if p == nil {
			p = &pkg{}
			pkgs[dir] = p
		}
		test := strings.HasSuffix(rel, "_test.go")
		p.code = p.code || !test
		if f.Doc != nil && strings.HasPrefix(strings.TrimSpace(f.Doc.Text()), "Package "+f.Name.Name) || f.Doc != nil && f.Name.Name == "main" {
			if test {
				p.testDocumented = true
			} else {
				p.documented = true
			}
		}
		return nil
	})
	var out []string
	for _, dir := range slices.Sorted(maps.Keys(pkgs)) {
		if p := pkgs[dir]; !p.documented && (p.code || !p.testDocumented) {
			out = append(out, dir)
		}
	}
	return out, err
}

// Each program's package stays thin (at most 2,000 lines outside tests)
// and every package says what it is for in a package comment.
func TestThinProgramsAndDocumentedPackages(t *testing.T) {
	problems, err := programProblems("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	missing, err := undocumented("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range missing {
		t.Errorf("%s: no package comment (// Package NAME ... above the package clause of one file)", dir)
	}
}

// The checks find a fat program and an undocumented package; test lines,
// a documented package and a test-only package documented in a test pass.
func TestThinProgramsCatchesOffenders(t *testing.T) {
	dir := t.TempDir()
	line := "var _ = 0\n"
	files := map[string]string{
		"cmd/fat/a.go":       "// Command fat.\npackage main\n" + strings.Repeat(line, 1000),
		"cmd/fat/b.go":       "package main\n" + strings.Repeat(line, 1000),
		"cmd/thin/a.go":      "// Command thin.\npackage main\n" + strings.Repeat(line, 1997),
		"cmd/thin/a_test.go": "package main\n" + strings.Repeat(line, 5000),
		"lib/a.go":           "// Package lib does things.\npackage lib\n",
		"lib/b.go":           "package lib\n",
		"bare/a.go":          "// A comment that is not the package's.\n\npackage bare\n",
		"bare/a_test.go":     "// Package bare is documented only in a test.\npackage bare\n",
		"suite/a_test.go":    "// Package suite runs checks.\npackage suite\n",
		"nodoc/a_test.go":    "package nodoc\n",
	}
	for name, body := range files {
		if err := writeFile(filepath.Join(dir, name), body); err != nil {
			t.Fatal(err)
		}
	}
	got, err := programProblems(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "cmd/fat: 2003 lines (at most 2000): move what it builds to a package of its own"; strings.Join(got, "\n") != want {
		t.Errorf("programs: %q, want %q", got, want)
	}
	missing, err := undocumented(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"bare", "nodoc"}; !slices.Equal(missing, want) {
		t.Errorf("undocumented %q, want %q", missing, want)
	}
}
