package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// MaxDiffBytes caps the diff a result's metadata, an event or an approval
// prompt carries; a longer diff is cut at a line end and says so.
const MaxDiffBytes = 8 << 10

// FileChange is one file as a mutating file tool is about to leave it.
// From is its path before ("" when the call creates it) and To its path
// after ("" when the call deletes it); they differ for a move.
type FileChange struct {
	From, To string // display paths
	Old, New []byte
}

// changeGate travels in a call's context to the gate of a file tool that
// declares Spec.Diff: it records the changes the tool is about to make,
// stops the tool there in a preview, and holds an approved call to the
// change that was approved.
type changeGate struct {
	mu       sync.Mutex
	dryRun   bool
	approved string // the fingerprint the change must have ("" = no check)
	reached  bool
	changes  []FileChange
}

type gateKey struct{}

func withGate(ctx context.Context, g *changeGate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// GateWrite is called by write_file, edit_file and apply_patch with every
// change they are about to make, after all their checks and before they
// write anything (or create a folder). It returns false, with the result
// to return, when the tool must stop: in a preview (nothing is written, the
// changes are recorded), or when an approval was given for another change
// (the file changed between the prompt and the call). Because a preview
// runs the tool's own code up to this point, what the prompt showed and
// what is written cannot differ unnoticed.
func GateWrite(ctx context.Context, changes ...FileChange) (Result, bool) {
	g, _ := ctx.Value(gateKey{}).(*changeGate)
	if g == nil {
		return Result{}, true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reached, g.changes = true, changes
	if g.dryRun {
		return Result{}, false
	}
	if g.approved != "" && fingerprint(changes) != g.approved {
		return Errorf("nothing was written: %s changed after the approval prompt showed its diff, so this is no longer the change that was approved. Read it again and retry.", changedPaths(changes)), false
	}
	return Result{}, true
}

// recorded returns what the gate saw, if the tool reached it.
func (g *changeGate) recorded() ([]FileChange, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.changes, g.reached
}

// fingerprint identifies a set of changes: the paths and the contents
// before and after.
func fingerprint(changes []FileChange) string {
	h := sha256.New()
	for _, c := range changes {
		oldSum, newSum := sha256.Sum256(c.Old), sha256.Sum256(c.New)
		fmt.Fprintf(h, "%q %q %x %x\n", c.From, c.To, oldSum, newSum)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func changedPaths(changes []FileChange) string {
	var names []string
	for _, c := range changes {
		name := c.To
		if name == "" {
			name = c.From
		}
		names = append(names, name)
	}
	return strings.Join(names, ", ")
}

// ChangeDiff is the unified diff of a call's file changes, as it goes into
// result metadata, tool.finished events and approval prompts.
type ChangeDiff struct {
	Text    string // the diff, cut at 8 KiB
	Added   int    // lines added, in the whole diff
	Removed int    // lines removed, in the whole diff
	Cut     bool   // Text was cut
}

// diffOf renders changes as one diff, file after file.
func diffOf(changes []FileChange) ChangeDiff {
	var b strings.Builder
	var d ChangeDiff
	for _, c := range changes {
		fd := unifiedDiff(c.From, c.To, c.Old, c.New)
		b.WriteString(fd.Text)
		d.Added += fd.Added
		d.Removed += fd.Removed
	}
	d.Text, d.Cut = capDiff(b.String(), MaxDiffBytes)
	return d
}

// capDiff cuts text at the last line end within max bytes and adds a line
// saying how many lines were left out.
func capDiff(text string, max int) (string, bool) {
	if len(text) <= max {
		return text, false
	}
	cut := strings.LastIndexByte(text[:max], '\n') + 1
	rest := strings.Count(text[cut:], "\n")
	return text[:cut] + fmt.Sprintf("[diff cut at %d KiB: %d more lines not shown]\n", max>>10, rest), true
}

// withDiff adds the diff of changes to a result's metadata: diff,
// lines_added, lines_removed and diff_cut (when cut).
func withDiff(r Result, changes []FileChange) Result {
	d := diffOf(changes)
	r = r.WithMeta("diff", d.Text).WithMeta("lines_added", d.Added).WithMeta("lines_removed", d.Removed)
	if d.Cut {
		r = r.WithMeta("diff_cut", true)
	}
	return r
}

// Preview is what a call of a file tool would change, computed without
// changing anything.
type Preview struct {
	ChangeDiff
	// Fingerprint identifies the change. Give it to Executor.Approved for
	// the call: if, when the call runs, its change is another (the file
	// changed in between), the call writes nothing and says why.
	Fingerprint string
	// Err is why there is no diff: the call would fail so (an unread
	// file, no match, bad arguments).
	Err string
}

// PreviewCall dry-runs a call of t: the tool runs its own checks and
// computes its change up to the moment it would write, and stops there.
// ok is false when t does not preview (Spec.Diff unset).
func PreviewCall(ctx context.Context, s *Session, t Tool, args json.RawMessage) (p Preview, ok bool) {
	if !t.Spec().Diff {
		return Preview{}, false
	}
	ctx, cancel := context.WithTimeout(ctx, s.Config.timeout())
	defer cancel()
	g := &changeGate{dryRun: true}
	res, err := func() (res Result, err error) {
		defer func() {
			if v := recover(); v != nil {
				err = fmt.Errorf("preview of %s crashed: %v", t.Spec().Name, v)
			}
		}()
		return t.Run(withGate(ctx, g), s, args)
	}()
	changes, reached := g.recorded()
	switch {
	case err != nil:
		return Preview{Err: err.Error()}, true
	case res.IsError:
		return Preview{Err: res.Text}, true
	case !reached:
		return Preview{Err: "the tool did not report its change"}, true
	}
	return Preview{ChangeDiff: diffOf(changes), Fingerprint: fingerprint(changes)}, true
}

type callIDKey struct{}

func withCallID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callIDKey{}, id)
}

// CallID is the ID of the model's tool call a tool runs for ("" outside
// the executor). A resumed run calls a pending tool again with the same
// ID, so a tool may name what it starts after it (delegate does).
func CallID(ctx context.Context) string {
	id, _ := ctx.Value(callIDKey{}).(string)
	return id
}
