package applypatch

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/patch"
)

//go:embed apply_patch.md
var applyPatchDoc string

// ApplyPatchParams are apply_patch's arguments.
type ApplyPatchParams struct {
	Input string `json:"input,omitempty" jsonschema:"the whole patch, from '*** Begin Patch' to '*** End Patch'"`
	// Patch is accepted as another name for Input.
	Patch string `json:"patch,omitempty" jsonschema:"another name for input (give one of them)"`
}

// text is the patch, under whichever name it came.
func (p ApplyPatchParams) text() string {
	if p.Input != "" {
		return p.Input
	}
	return p.Patch
}

// TouchedPaths returns every path the patch's file headers name, Move
// targets included, from a cheap scan that does not parse hunks.
func (p ApplyPatchParams) TouchedPaths() []string { return patch.Paths(p.text()) }

var _ tools.PathLister = ApplyPatchParams{}

// ApplyPatch returns the apply_patch tool: it adds, updates, moves and
// deletes files from one patch in the Codex format, all or nothing.
func ApplyPatch() tools.Tool {
	return tools.New(tools.Spec{
		Guidance:    []tools.GuidanceLine{tools.Line(tools.SectionEditing, 20, "apply_patch applies a multi-file patch atomically: all files or none.")},
		Name:        tools.NameApplyPatch,
		Description: applyPatchDoc,
		ReadOnly:    false,
		Parallel:    tools.PerPath,
		Tier:        tools.TierAlways,
		Truncation:  tools.HeadLines(200),
		Diff:        true,
	}, runApplyPatch)
}

func runApplyPatch(ctx context.Context, s *tools.Session, p ApplyPatchParams) (tools.Result, error) {
	switch {
	case p.Input == "" && p.Patch == "":
		return tools.Errorf("apply_patch: give the patch as input (from '*** Begin Patch' to '*** End Patch')"), nil
	case p.Input != "" && p.Patch != "" && p.Input != p.Patch:
		return tools.Errorf("apply_patch: give the patch once, as input; patch is only another name for it"), nil
	}
	doc, err := patch.Parse(p.text())
	if err != nil {
		return tools.Errorf("apply_patch: the patch is malformed, nothing was written: %v", err), nil
	}
	pl := newPatchPlan(s)
	var summary []string
	for _, op := range doc.Ops {
		line, err := pl.apply(op)
		if err != nil {
			return tools.Refusal(fmt.Errorf("apply_patch: nothing was written: %w", err)), nil
		}
		summary = append(summary, line)
	}
	if err := ctx.Err(); err != nil {
		return tools.Result{}, err
	}
	if res, ok := tools.GateWrite(ctx, pl.changes()...); !ok {
		return res, nil
	}
	if err := pl.commit(); err != nil {
		return tools.Errorf("apply_patch: %v", err), nil
	}
	res := tools.Text(strings.Join(summary, "\n")).WithMeta("files", summary)
	if pl.blind {
		// An update needs no prior read (its context lines are checked),
		// but the agent wrote without having read the file: counted.
		res = res.WithMeta("blind", true)
	}
	return res, nil
}

// fileState is one file as the patch plan sees it: how it was on disk
// and how the patch leaves it.
type fileState struct {
	abs, display string
	existed      bool // a regular file on disk before the patch
	orig         []byte
	mode         fs.FileMode // permission bits, kept on rewrite
	exists       bool        // after the operations planned so far
	content      []byte
	link         string     // a symbolic link's target, for a link being deleted
	movedFrom    *fileState // the file this one is moved from, with its update
}

// patchPlan computes every file's new content in memory before anything
// is written.
type patchPlan struct {
	s     *tools.Session
	files map[string]*fileState
	order []string // absolute paths in first-touched order
	blind bool     // an update of an existing file the session had not read as it is
}

func newPatchPlan(s *tools.Session) *patchPlan {
	return &patchPlan{s: s, files: map[string]*fileState{}}
}

// file resolves path (confined to the workspace) and returns its state,
// reading it from disk the first time.
func (pl *patchPlan) file(path string) (*fileState, error) {
	abs, err := pl.s.Workspace.Resolve(path)
	if err != nil {
		return nil, err
	}
	if err := pl.s.Workspace.CheckWritable(abs); err != nil {
		return nil, err
	}
	if st, ok := pl.files[abs]; ok {
		return st, nil
	}
	st := &fileState{abs: abs, display: pl.s.Workspace.Display(abs), mode: 0o644}
	fi, err := pl.s.Workspace.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("%s: %s", st.display, pathErrText(err))
	case fi.IsDir():
		return nil, fmt.Errorf("%s is a directory, not a file", st.display)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", st.display)
	default:
		if st.orig, err = pl.s.Workspace.ReadFile(abs); err != nil {
			return nil, fmt.Errorf("read %s: %s", st.display, pathErrText(err))
		}
		st.existed, st.exists, st.mode = true, true, fi.Mode().Perm()
		st.content = st.orig
	}
	pl.files[abs] = st
	pl.order = append(pl.order, abs)
	return st, nil
}

// mustHaveRead enforces read-before-write for a file that exists on disk.
func (pl *patchPlan) mustHaveRead(st *fileState) error {
	if !st.existed {
		return nil
	}
	_, err := pl.s.Reads.Check(pl.s.Workspace, st.abs, st.display)
	return err
}

// Symlink returns the state of path itself when it is a symbolic link
// (inside the workspace, pointing inside it), so that deleting it removes
// the link rather than the file it points to.
func (pl *patchPlan) symlink(path string) (*fileState, bool, error) {
	path = filepath.Clean(path)
	if _, err := pl.s.Workspace.Resolve(path); err != nil {
		return nil, false, err
	}
	parent, err := pl.s.Workspace.Resolve(filepath.Dir(path))
	if err != nil {
		return nil, false, err
	}
	abs := filepath.Join(parent, filepath.Base(path))
	if err := pl.s.Workspace.CheckWritable(abs); err != nil {
		return nil, false, err
	}
	if st, ok := pl.files[abs]; ok {
		return st, st.link != "", nil
	}
	fi, err := pl.s.Workspace.Lstat(abs)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil, false, nil
	}
	target, err := pl.s.Workspace.Readlink(abs)
	if err != nil {
		return nil, false, fmt.Errorf("read link %s: %s", pl.s.Workspace.Display(abs), pathErrText(err))
	}
	st := &fileState{abs: abs, display: pl.s.Workspace.Display(abs), existed: true, exists: true, link: target}
	pl.files[abs] = st
	pl.order = append(pl.order, abs)
	return st, true, nil
}

// apply plans one operation and returns its summary line.
func (pl *patchPlan) apply(op patch.FileOp) (string, error) {
	if op.Kind == patch.OpDelete || op.MoveTo != "" {
		link, ok, err := pl.symlink(op.Path)
		switch {
		case err != nil:
			return "", err
		case ok && op.MoveTo != "":
			return "", fmt.Errorf("%s is a symbolic link; apply_patch does not move links (use shell mv, or update the file it points to)", link.display)
		case ok && !link.exists:
			return "", fmt.Errorf("cannot delete %s: no such file", link.display)
		case ok:
			// A link holds no content to lose, so no prior read is needed.
			link.exists = false
			return "D " + link.display, nil
		}
	}
	st, err := pl.file(op.Path)
	if err != nil {
		return "", err
	}
	switch op.Kind {
	case patch.OpAdd:
		if st.exists {
			if err := pl.mustHaveRead(st); err != nil {
				return "", fmt.Errorf("*** Add File: %s would replace an existing file: %w", st.display, err)
			}
		}
		st.exists = true
		st.content = []byte(patch.Text{Lines: op.Lines, FinalEOL: true}.Join())
		return "A " + st.display, nil
	case patch.OpDelete:
		if !st.exists {
			return "", fmt.Errorf("cannot delete %s: no such file", st.display)
		}
		if err := pl.mustHaveRead(st); err != nil {
			return "", fmt.Errorf("cannot delete %s: %w", st.display, err)
		}
		st.exists, st.content = false, nil
		return "D " + st.display, nil
	}
	return pl.update(op, st)
}

func (pl *patchPlan) update(op patch.FileOp, st *fileState) (string, error) {
	if !st.exists {
		return "", fmt.Errorf("*** Update File: %s does not exist (use *** Add File: to create a file)", st.display)
	}
	if bytes.IndexByte(st.content, 0) >= 0 {
		return "", fmt.Errorf("*** Update File: %s is a binary file; apply_patch edits text files only", st.display)
	}
	if st.existed && !pl.s.Reads.ReadCurrent(st.abs, st.orig) {
		pl.blind = true
	}
	ft := patch.SplitText(string(st.content))
	lines, err := patch.Apply(ft.Lines, op.Hunks)
	if err != nil {
		//lint:ignore ST1005 this text is the model's to read, and the advice stands on a line of its own
		return "", fmt.Errorf("%s: %v\nRe-read the file with read_file and copy its context lines exactly.", st.display, err)
	}
	ft.Lines = lines
	content := []byte(ft.Join())
	if op.MoveTo == "" {
		st.content = content
		return "M " + st.display, nil
	}
	dst, err := pl.file(op.MoveTo)
	if err != nil {
		return "", err
	}
	if dst == st {
		st.content = content
		return "M " + st.display, nil
	}
	if dst.exists {
		if err := pl.mustHaveRead(dst); err != nil {
			return "", fmt.Errorf("*** Move to: %s would replace an existing file: %w", dst.display, err)
		}
	}
	dst.exists, dst.content, dst.mode, dst.movedFrom = true, content, st.mode, st
	st.exists, st.content = false, nil
	return "R " + st.display + " -> " + dst.display, nil
}
