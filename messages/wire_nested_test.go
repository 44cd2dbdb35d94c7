package messages

import (
	"encoding/json"
	"errors"
	"path"
	"strings"
	"testing"
)

// nestedResult is a result of run r1 carrying ns.
func nestedResult(ns ...NestedChanges) Result {
	return Result{V: ProtocolVersion, Run: "r1", Agent: "lead-1", Kind: "lead", Status: "completed", Nested: ns}
}

func goodNested(agent string) NestedChanges {
	return NestedChanges{Agent: agent, Status: ChangeStatusConflict, Files: []string{"f.go"}, Conflicts: []string{"f.go"}, Patch: []byte("p")}
}

// A hostile or broken nested changeset is refused with an error naming
// it; the well-formed ones and the rest of the result stand.
func TestCheckNestedRefusesWhatIsNotSafe(t *testing.T) {
	bad := map[string]NestedChanges{
		"../x":            {Agent: "../x", Status: "conflict", Files: []string{"f.go"}, Patch: []byte("p")},
		"a/b":             {Agent: "a/b", Status: "conflict", Files: []string{"f.go"}, Patch: []byte("p")},
		".hidden":         {Agent: ".hidden", Status: "conflict", Files: []string{"f.go"}, Patch: []byte("p")},
		`a\b`:             {Agent: `a\b`, Status: "conflict", Files: []string{"f.go"}, Patch: []byte("p")},
		"status":          {Agent: "w1", Status: "applied", Files: []string{"f.go"}, Patch: []byte("p")},
		"leaves the repo": {Agent: "w1", Status: "conflict", Files: []string{"../etc/passwd"}, Patch: []byte("p")},
		"no files":        {Agent: "w1", Status: "conflict", Patch: []byte("p")},
		"no patch":        {Agent: "w1", Status: "conflict", Files: []string{"f.go"}},
		"both":            {Agent: "w1", Status: "conflict", Files: []string{"f.go"}, Patch: []byte("p"), PatchRef: "r1/x.patch"},
		"other run's ref": {Agent: "w1", Status: "patch", Files: []string{"f.go"}, PatchRef: "r2/x.patch"},
		"too many files":  {Agent: "w1", Status: "patch", Files: make([]string, MaxNestedFiles+1), Patch: []byte("p")},
		"long ID":         {Agent: strings.Repeat("w", 129), Status: "patch", Files: []string{"f.go"}, Patch: []byte("p")},
	}
	for name, n := range bad {
		r := nestedResult(goodNested("w0"), n)
		if err := r.Validate(); err != nil {
			t.Errorf("%s: the result itself is refused: %v", name, err)
		}
		kept, err := r.CheckNested()
		if !errors.Is(err, ErrNestedRefused) || len(kept) != 1 || kept[0].Agent != "w0" {
			t.Errorf("%s: kept %d, err %v; want w0 kept and an error", name, len(kept), err)
		}
	}
	r := nestedResult(bad["../x"])
	if _, err := r.CheckNested(); err == nil || !strings.Contains(err.Error(), `"../x"`) {
		t.Errorf("the error does not name the refused agent: %v", err)
	}
	many := make([]NestedChanges, MaxNestedChanges+1)
	for i := range many {
		many[i] = goodNested("w" + strings.Repeat("1", i+1))
	}
	r = nestedResult(many...)
	if kept, err := r.CheckNested(); !errors.Is(err, ErrNestedRefused) || kept != nil || !strings.Contains(err.Error(), "at most 32") {
		t.Errorf("an oversized list: kept %d, %v", len(kept), err)
	}
	big := goodNested("w1")
	big.Patch = make([]byte, MaxNestedInline+1)
	r = nestedResult(big)
	if kept, err := r.CheckNested(); !errors.Is(err, ErrNestedRefused) || kept != nil {
		t.Errorf("too many inline bytes: kept %d, %v", len(kept), err)
	}
	r = nestedResult(goodNested("w1"), NestedChanges{Agent: "w2", Status: "patch", Files: []string{"a/b.go"}, PatchRef: "r1/lead-1-1-w2.patch"})
	if kept, err := r.CheckNested(); err != nil || len(kept) != 2 {
		t.Errorf("good ones: kept %d, %v", len(kept), err)
	}
}

// FuzzCheckNested: whatever a result's nested changesets hold, what
// CheckNested keeps names a file inside the run's changes directory and
// paths inside the repository.
func FuzzCheckNested(f *testing.F) {
	b, _ := json.Marshal(nestedResult(goodNested("w1")))
	f.Add(b)
	f.Add([]byte(`{"v":1,"run":"r1","agent":"a","status":"completed","nested":[{"agent":"../x","status":"conflict","files":["f"],"patch":"cA=="}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Decode[Result](b, 1<<20)
		if err != nil {
			return
		}
		kept, _ := r.CheckNested()
		for _, n := range kept {
			if n.Agent == "" || path.Base(n.Agent) != n.Agent || strings.HasPrefix(n.Agent, ".") || strings.ContainsAny(n.Agent, `/\`) {
				t.Fatalf("kept agent %q", n.Agent)
			}
			for _, p := range n.Files {
				if strings.HasPrefix(p, "/") || strings.HasPrefix(path.Clean(p), "..") {
					t.Fatalf("kept path %q", p)
				}
			}
			if n.PatchRef != "" && !strings.HasPrefix(n.PatchRef, r.Run+"/") {
				t.Fatalf("kept patch_ref %q of run %q", n.PatchRef, r.Run)
			}
		}
	})
}
