package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/messages"
)

// budgetSentinels are the budget package's sentinel errors by name. The
// test reads budget/errors.go, so a sentinel added there and not here
// fails it.
var budgetSentinels = map[string]error{
	"ErrBudgetExhausted": budget.ErrBudgetExhausted,
	"ErrAcquireTimeout":  budget.ErrAcquireTimeout,
	"ErrUnknownAgent":    budget.ErrUnknownAgent,
	"ErrLimitExceeded":   budget.ErrLimitExceeded,
	"ErrDuplicateAgent":  budget.ErrDuplicateAgent,
	"ErrReleased":        budget.ErrReleased,
	"ErrInvalidRequest":  budget.ErrInvalidRequest,
	"ErrWithdrawn":       budget.ErrWithdrawn,
	"ErrStopped":         budget.ErrStopped,
	"ErrUnreachable":     budget.ErrUnreachable,
}

// Every budget sentinel error, wrapped as the budget actor wraps it,
// survives the trip to a wire error code, through JSON, and back: the
// far side's errors.Is finds the same sentinel and no other, under a code
// of its own from the messages set.
func TestBudgetErrorsSurviveTheWire(t *testing.T) {
	t.Parallel()
	declared := declaredNames(t, filepath.Join("..", "budget", "errors.go"), token.VAR, "Err")
	if len(declared) == 0 {
		t.Fatal("no sentinels found in budget/errors.go")
	}
	for _, name := range declared {
		if budgetSentinels[name] == nil {
			t.Errorf("budget.%s is not in this test's table (nor, perhaps, in budgetCodes)", name)
		}
	}
	codes := map[string]bool{}
	for _, v := range codeValues(t, filepath.Join("..", "messages", "wire.go")) {
		codes[v] = true
	}
	byCode := map[string]string{}
	for name, sentinel := range budgetSentinels {
		t.Run(name, func(t *testing.T) {
			wrapped := fmt.Errorf("acquire for worker-1: %w", sentinel)
			we := toWireError(wrapped)
			if we == nil || we.Code == messages.CodeInternal || we.Message != wrapped.Error() {
				t.Fatalf("to the wire: %+v", we)
			}
			if !codes[we.Code] {
				t.Errorf("code %q is not one of messages' codes", we.Code)
			}
			if other, dup := byCode[we.Code]; dup {
				t.Errorf("code %q serves %s and %s: the far side cannot tell them apart", we.Code, other, name)
			}
			byCode[we.Code] = name
			b, err := json.Marshal(messages.BudgetAcquireReply{V: messages.ProtocolVersion, Error: we})
			if err != nil {
				t.Fatal(err)
			}
			r, err := messages.Decode[messages.BudgetAcquireReply](b, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			back := fromWireError(r.Error)
			if !errors.Is(back, sentinel) || !strings.Contains(back.Error(), "worker-1") {
				t.Fatalf("back from the wire: %v, want %v", back, sentinel)
			}
			for other, s := range budgetSentinels {
				if other != name && errors.Is(back, s) {
					t.Errorf("back from the wire it is also %s", other)
				}
			}
		})
	}
	if toWireError(nil) != nil || fromWireError(nil) != nil {
		t.Error("nil does not stay nil")
	}
	unknown := fromWireError(&messages.Error{Code: messages.CodeInternal, Message: "disk full"})
	for name, s := range budgetSentinels {
		if errors.Is(unknown, s) {
			t.Errorf("an internal error came back as %s", name)
		}
	}
	if got := toWireError(errors.New("disk full")); got.Code != messages.CodeInternal {
		t.Errorf("a foreign error went out as %q", got.Code)
	}
}

// codeValues are the values of the Code constants declared in file.
func codeValues(t *testing.T, file string) []string {
	t.Helper()
	var out []string
	for _, s := range valueSpecs(t, file, token.CONST) {
		for i, n := range s.Names {
			if lit, ok := s.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(n.Name, "Code") {
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, v)
			}
		}
	}
	return out
}

// declaredNames lists the package-level names of kind (var or const)
// declared in file that start with prefix.
func declaredNames(t *testing.T, file string, kind token.Token, prefix string) []string {
	t.Helper()
	var out []string
	for _, s := range valueSpecs(t, file, kind) {
		for _, n := range s.Names {
			if strings.HasPrefix(n.Name, prefix) {
				out = append(out, n.Name)
			}
		}
	}
	return out
}

// valueSpecs are the package-level var or const specs of file.
func valueSpecs(t *testing.T, file string, kind token.Token) []*ast.ValueSpec {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []*ast.ValueSpec
	for _, d := range f.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == kind {
			for _, s := range g.Specs {
				out = append(out, s.(*ast.ValueSpec))
			}
		}
	}
	return out
}
