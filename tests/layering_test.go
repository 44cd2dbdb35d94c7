// Package tests holds the checks of the code base as a whole; the
// end-to-end, README and benchmark suites are its subdirectories.
package tests

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/troupe-ai/troupe"

// row is one row of docs/architecture.md's package table: the packages it
// names and the packages of ours they may import.
type row struct {
	pkgs    []string // "examples/*" stands for every package under examples/
	imports []string // package paths, or one of none, everything, "all of the above", "public packages"
}

// readTable reads the package table of docs/architecture.md, top to bottom.
func readTable(t *testing.T) []row {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "| package | owns | imports of ours |"):
			in = true
			continue
		case !in || strings.HasPrefix(line, "|---"):
			continue
		case !strings.HasPrefix(line, "|"):
			if len(rows) > 0 {
				return rows
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			t.Fatalf("table row %q", line)
		}
		var r row
		for _, p := range strings.Split(cells[0], ",") {
			r.pkgs = append(r.pkgs, strings.Trim(strings.TrimSpace(p), "`"))
		}
		for _, p := range strings.Split(cells[len(cells)-1], ",") {
			r.imports = append(r.imports, strings.TrimSpace(p))
		}
		rows = append(rows, r)
	}
	return rows
}

// imports maps each package of the module (test files aside) to its
// imports, read with go/parser.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != ".." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !slices.Contains(out[pkg], p) {
				out[pkg] = append(out[pkg], p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// check returns every way the imports leave the table and the fixed rules:
// messages imports nothing of ours (and of others only uuid), tools does
// not reach actors nor a tool package (toolRules), actors does not reach NATS, and a package imports only
// what its row names, from rows above it.
func check(rows []row, imps map[string][]string) []string {
	var errs []string
	rank := func(pkg string) int {
		for i, r := range rows {
			for _, p := range r.pkgs {
				if p == pkg || (strings.HasSuffix(p, "/*") && strings.HasPrefix(pkg, strings.TrimSuffix(p, "*"))) {
					return i
				}
			}
		}
		return -1
	}
	ours := func(pkg string) []string {
		var out []string
		for _, p := range imps[pkg] {
			if p == module || strings.HasPrefix(p, module+"/") {
				out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, module), "/"))
			}
		}
		return out
	}
	reach := func(pkg string) map[string]bool { // pkg's packages of ours, transitively
		seen := map[string]bool{}
		var walk func(string)
		walk = func(p string) {
			for _, q := range ours(p) {
				if !seen[q] {
					seen[q] = true
					walk(q)
				}
			}
		}
		walk(pkg)
		return seen
	}
	pkgs := make([]string, 0, len(imps))
	for p := range imps {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, pkg := range pkgs {
		r := rank(pkg)
		if r < 0 {
			errs = append(errs, fmt.Sprintf("%s is not in docs/architecture.md's package table", pkg))
			continue
		}
		allowed := rows[r].imports
		for _, im := range ours(pkg) {
			ir := rank(im)
			switch {
			case ir < 0:
				errs = append(errs, fmt.Sprintf("%s imports %s, which is not in the table", pkg, im))
			case ir >= r && !slices.Contains(rows[r].pkgs, im):
				errs = append(errs, fmt.Sprintf("%s imports %s, which is not above it in the table", pkg, im))
			case slices.Contains(allowed, "everything"), slices.Contains(allowed, "all of the above"):
			case slices.Contains(allowed, "public packages"):
				if strings.HasPrefix(im, "internal/") || strings.HasPrefix(im, "cmd/") {
					errs = append(errs, fmt.Sprintf("%s imports %s, which is not public", pkg, im))
				}
			case !slices.Contains(allowed, im):
				errs = append(errs, fmt.Sprintf("%s imports %s, which its row does not name (it names %s)", pkg, im, strings.Join(allowed, ", ")))
			}
		}
	}
	// The fixed rules, whatever the table says.
	for _, p := range imps["messages"] {
		if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") && p != "github.com/google/uuid" {
			errs = append(errs, "messages imports "+p+": it may import the standard library and uuid only")
		}
	}
	if reach("tools")["actors"] {
		errs = append(errs, "tools imports actors")
	}
	errs = append(errs, toolRules(reach)...)
	errs = append(errs, folderRules(pkgs, ours)...)
	for _, pkg := range append([]string{"actors"}, keys(reach("actors"))...) {
		for _, p := range imps[pkg] {
			if strings.HasPrefix(p, "github.com/nats-io/") {
				errs = append(errs, fmt.Sprintf("actors reaches NATS: %s imports %s", pkg, p))
			}
		}
	}
	if got := ours("examples/monitor"); imps["examples/monitor"] != nil && !slices.Equal(got, []string{"messages"}) {
		errs = append(errs, fmt.Sprintf("examples/monitor imports %v of ours; docs/events.md says a Go subscriber needs messages only", got))
	}
	return errs
}

// folderRules: each top-level folder is one floor. No two folders import
// each other, and internal/ holds leaf libraries only: a package there
// imports nothing of ours outside internal/ and configs.
func folderRules(pkgs []string, ours func(string) []string) []string {
	var errs []string
	folder := func(p string) string { f, _, _ := strings.Cut(p, "/"); return f }
	edge := map[[2]string]string{} // folder pair → an import that makes it
	for _, pkg := range pkgs {
		for _, im := range ours(pkg) {
			if a, b := folder(pkg), folder(im); a != b {
				edge[[2]string{a, b}] = pkg + " imports " + im
			}
			if folder(pkg) == "internal" && folder(im) != "internal" && im != "configs" {
				errs = append(errs, fmt.Sprintf("%s imports %s: internal/ holds leaf libraries only (the assembly is app/)", pkg, im))
			}
		}
	}
	for _, k := range keys(toSetKeys(edge)) {
		a, b, _ := strings.Cut(k, " ")
		if back, ok := edge[[2]string{b, a}]; ok && a < b {
			errs = append(errs, fmt.Sprintf("folders %s and %s import each other: %s; %s", a, b, edge[[2]string{a, b}], back))
		}
	}
	return errs
}

func toSetKeys(m map[[2]string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k[0]+" "+k[1]] = true
	}
	return out
}

// toolLeaves are the pure packages under tools/: they import no tools
// package. The framework imports none of them either (a tool package does).
var toolLeaves = []string{"tools/patch", "tools/shell/guard", "tools/procguard"}

// toolRules: the framework tools reaches no package under tools/ (neither
// a tool package such as tools/shell nor a leaf), and a leaf reaches no
// tools package.
func toolRules(reach func(string) map[string]bool) []string {
	var errs []string
	for _, p := range keys(reach("tools")) {
		if strings.HasPrefix(p, "tools/") {
			errs = append(errs, "the framework tools imports "+p+", a package under tools/")
		}
	}
	for _, leaf := range toolLeaves {
		for _, p := range keys(reach(leaf)) {
			if p == "tools" || strings.HasPrefix(p, "tools/") {
				errs = append(errs, fmt.Sprintf("the leaf %s imports %s", leaf, p))
			}
		}
	}
	return errs
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// The code's imports follow docs/architecture.md's table and the fixed
// layering rules.
func TestLayering(t *testing.T) {
	rows := readTable(t)
	if len(rows) < 15 {
		t.Fatalf("read %d rows of docs/architecture.md's package table", len(rows))
	}
	imps := imports(t)
	for _, want := range []string{"messages", "tools", "tools/builtin", "tools/patch", "tools/applypatch", "actors", "bus", "watch", "cmd/orchestrator", "examples/monitor",
		"internal/httpguard", "app/webserver", "app/mcpserver"} {
		if _, ok := imps[want]; !ok {
			t.Fatalf("package %s not found: found %v", want, keys(toSet(imps)))
		}
	}
	for _, e := range check(rows, imps) {
		t.Error(e)
	}
}

func toSet(m map[string][]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

// The checker itself catches each kind of break: messages importing a
// package of ours, tools importing actors or any package under tools/, a leaf under
// tools/ importing tools, actors reaching NATS through a
// package of ours, a package importing one below it, or one its row does
// not name, and a package missing from the table.
func TestLayeringCatchesBreaks(t *testing.T) {
	rows := readTable(t)
	good := imports(t)
	cases := map[string]func(map[string][]string){
		"messages imports":                        func(m map[string][]string) { m["messages"] = append(m["messages"], module+"/internal/text") },
		"tools imports actors":                    func(m map[string][]string) { m["tools"] = append(m["tools"], module+"/actors") },
		"the framework tools imports tools/web":   func(m map[string][]string) { m["tools"] = append(m["tools"], module+"/tools/web") },
		"the framework tools imports tools/patch": func(m map[string][]string) { m["tools"] = append(m["tools"], module+"/tools/patch") },
		"the leaf tools/patch imports": func(m map[string][]string) {
			m["tools/patch"] = append(m["tools/patch"], module+"/tools")
		},
		"actors reaches NATS":    func(m map[string][]string) { m["budget"] = append(m["budget"], "github.com/nats-io/nats.go") },
		"not above it":           func(m map[string][]string) { m["budget"] = append(m["budget"], module+"/cluster") },
		"which its row does not": func(m map[string][]string) { m["bus"] = append(m["bus"], module+"/internal/text") },
		"is not in docs":         func(m map[string][]string) { m["internal/newthing"] = nil },
		"examples/monitor":       func(m map[string][]string) { m["examples/monitor"] = append(m["examples/monitor"], module+"/watch") },
		"internal/ holds leaf":   func(m map[string][]string) { m["internal/text"] = append(m["internal/text"], module+"/messages") },
		"import each other":      func(m map[string][]string) { m["changes"] = append(m["changes"], module+"/actors/convo") },
	}
	for want, breakIt := range cases {
		m := map[string][]string{}
		for k, v := range good {
			m[k] = slices.Clone(v)
		}
		breakIt(m)
		errs := strings.Join(check(rows, m), "\n")
		if !strings.Contains(errs, want) {
			t.Errorf("%s: not caught; the checker said:\n%s", want, errs)
		}
	}
}
