package messages

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// wireTypeNames are the wire messages this package declares: every type
// with a Validate method, the event envelope aside (docs/events.md is
// its document).
func wireTypeNames(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range packageFiles(t) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "Validate" || fn.Recv == nil {
				continue
			}
			star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			if name := star.X.(*ast.Ident).Name; name != "Event" {
				out = append(out, name)
			}
		}
	}
	return out
}

// errorCodes are the values of the Code constants.
func errorCodes(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, f := range packageFiles(t) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || !strings.HasPrefix(n.Name, "Code") {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, v)
				}
			}
		}
	}
	return out
}

func packageFiles(t *testing.T) []*ast.File {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

var docSection = regexp.MustCompile("(?m)^#+ .*\\(`messages\\.(\\w+)`\\)\\s*$")

// docs/wire.md documents every wire message (a section of its own, whose
// JSON example decodes into the type, strictly, and validates) and every
// error code; wireSamples, which the round-trip and fuzz tests use, has
// every wire message too.
func TestWireDoc(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "wire.md"))
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]any{}
	for _, v := range wireSamples() {
		samples[reflect.TypeOf(v).Elem().Name()] = v
	}
	names := wireTypeNames(t)
	if len(names) < 10 {
		t.Fatalf("found only %v", names)
	}
	sections := map[string]string{} // type → its section's text
	idx := docSection.FindAllSubmatchIndex(doc, -1)
	for i, m := range idx {
		end := len(doc)
		if i+1 < len(idx) {
			end = idx[i+1][0]
		}
		sections[string(doc[m[2]:m[3]])] = string(doc[m[1]:end])
	}
	for _, name := range names {
		if samples[name] == nil {
			t.Errorf("%s is not in wireSamples: no round-trip or fuzz test covers it", name)
		}
		body, ok := sections[name]
		if !ok {
			t.Errorf("docs/wire.md has no section for messages.%s", name)
			continue
		}
		examples := jsonBlocks(body)
		if len(examples) == 0 {
			t.Errorf("docs/wire.md: messages.%s has no JSON example", name)
		}
		for _, ex := range examples {
			v := reflect.New(reflect.TypeOf(samples[name]).Elem()).Interface()
			dec := json.NewDecoder(strings.NewReader(ex))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				t.Errorf("docs/wire.md: the example of messages.%s does not decode: %v", name, err)
				continue
			}
			if err := v.(validator).Validate(); err != nil {
				t.Errorf("docs/wire.md: the example of messages.%s is not valid: %v", name, err)
			}
			if name == "Task" && !reflect.DeepEqual(v, samples[name]) {
				t.Errorf("docs/wire.md: the task example is not messages/testdata/wire/task.json")
			}
		}
	}
	for _, code := range errorCodes(t) {
		if !bytes.Contains(doc, []byte("| `"+code+"` |")) {
			t.Errorf("docs/wire.md does not list the error code %q", code)
		}
	}
}

// jsonBlocks are the ```json blocks of a Markdown text.
func jsonBlocks(md string) []string {
	var out []string
	for {
		_, rest, ok := strings.Cut(md, "```json\n")
		if !ok {
			return out
		}
		block, after, _ := strings.Cut(rest, "```")
		out = append(out, block)
		md = after
	}
}
