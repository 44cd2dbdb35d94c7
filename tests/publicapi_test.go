package tests

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// publicPackages are the packages a program in another module uses.
var publicPackages = []string{"actors", "budget", "bus", "cluster", "configs", "llm", "llm/llmtest", "messages",
	"tools", "tools/agent", "tools/builtin", "tools/applypatch", "tools/mcp", "tools/patch", "tools/procguard", "tools/shell",
	"tools/shell/guard", "tools/toolstest", "tools/web", "watch"}

// The public API stands alone: no exported type, field, function, method
// or variable of a public package names a type of an internal package,
// which a program in another module could neither name nor build.
func TestPublicAPINamesNoInternalType(t *testing.T) {
	for _, pkg := range publicPackages {
		for _, p := range internalRefs(t, filepath.Join("..", pkg)) {
			t.Errorf("%s: %s", pkg, p)
		}
	}
}

// The check finds an internal type in each place it looks.
func TestPublicAPICheckCatchesInternalTypes(t *testing.T) {
	dir := t.TempDir()
	src := `package p

import "example.com/m/internal/x"

type Alias = x.T
type S struct {
	Exported x.T
	hidden   x.T
}
func F(a x.T) {}
func G() (*x.T, error) { return nil, nil }
var V x.T
type I interface{ M() []x.T }
func (S) M(m map[string]x.T) {}
type fine struct{ A x.T }
func h(x.T) {}
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got := internalRefs(t, dir)
	if len(got) != 7 {
		t.Fatalf("found %d, want 7 (Alias, S.Exported, F, G, V, I.M, S.M):\n%s", len(got), strings.Join(got, "\n"))
	}
}

// internalRefs lists the exported declarations of the package in dir that
// name a type of an internal package.
func internalRefs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	fset := token.NewFileSet()
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]string{} // local import name → path
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if !strings.Contains(path, "/internal/") {
				continue
			}
			local := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				local = imp.Name.Name
			}
			internal[local] = path
		}
		if len(internal) == 0 {
			continue
		}
		check := func(what string, n ast.Node) {
			if n == nil {
				return
			}
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] != "" {
						out = append(out, fmt.Sprintf("%s names %s.%s (%s)", what, id.Name, sel.Sel.Name, fset.Position(sel.Pos())))
						return false
					}
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() || (d.Recv != nil && !exportedRecv(d.Recv)) {
					continue
				}
				check(d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							checkType(s.Name.Name, s.Type, check)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								check(n.Name, s.Type)
							}
						}
					}
				}
			}
		}
	}
	return out
}

// checkType checks a type's exported parts: a struct's exported and
// embedded fields, an interface's methods, anything else whole.
func checkType(name string, typ ast.Expr, check func(string, ast.Node)) {
	st, ok := typ.(*ast.StructType)
	if !ok {
		check(name, typ)
		return
	}
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			check(name+" (embedded)", f.Type)
		}
		for _, n := range f.Names {
			if n.IsExported() {
				check(name+"."+n.Name, f.Type)
			}
		}
	}
}

func exportedRecv(r *ast.FieldList) bool {
	typ := r.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.IsExported()
		}
		return false
	}
}
