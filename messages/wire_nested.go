package messages

import (
	"errors"
	"fmt"
	"strings"
)

// NestedChanges is the changeset of an agent that a remote agent started
// (at any depth below it, on its node) and that did not merge into the
// remote agent's directory: it conflicted there (status conflict), or
// its agent did not complete (status patch). It travels in the remote
// agent's Result; the requester keeps its patch as
// runs/<run>/changes/<agent>.patch under its data directory and reports
// it like a changeset of its own agents.
type NestedChanges struct {
	Agent     string   `json:"agent" doc:"the agent whose changes they are (a descendant of the result's agent)"`
	Status    string   `json:"status" doc:"conflict or patch"`
	Files     []string `json:"files" doc:"the files the changeset changes"`
	Conflicts []string `json:"conflicts,omitempty" doc:"the files that conflicted (status conflict)"`
	// Patch is the changeset's binary-safe git patch, against the state
	// of the directory its agent started from.
	Patch    []byte `json:"patch,omitempty"`
	PatchRef string `json:"patch_ref,omitempty" doc:"object store name of the patch when too large to carry"`
	// PatchSHA256 is the patch's SHA-256 (Digest): the requester checks
	// the patch it fetched against it.
	PatchSHA256 string `json:"patch_sha256,omitempty" doc:"the patch's SHA-256 in hex; required with patch_ref"`
	// PatchFile, never on the wire, is the patch spooled to a private
	// file of this process's (Changeset.PatchFile).
	PatchFile string `json:"-"`
}

// Bounds of a result's nested changesets.
const (
	// MaxNestedChanges is the most nested changesets one result carries.
	MaxNestedChanges = 32
	// MaxNestedFiles is the most files one nested changeset lists.
	MaxNestedFiles = 1000
	// MaxNestedInline is the most patch bytes a result carries inline
	// for its nested changesets together; the rest go by PatchRef.
	MaxNestedInline = 128 << 10
)

// maxAgentIDLen bounds an agent ID that becomes a file name.
const maxAgentIDLen = 128

// ErrNestedRefused marks nested changesets of a result that were refused
// (the rest of the result stands).
var ErrNestedRefused = errors.New("nested changes refused")

// CheckNested returns the nested changesets of r that are well formed and
// an error (ErrNestedRefused) naming the ones refused: an agent ID that is
// not a file name, a path that leaves the repository, a patch reference
// outside the run, too many files, or, for the list as a whole, too many
// changesets or too many inline patch bytes (then none is kept). The rest
// of the result does not depend on them: Validate does not look at them.
func (r *Result) CheckNested() ([]NestedChanges, error) {
	if len(r.Nested) == 0 {
		return nil, nil
	}
	if len(r.Nested) > MaxNestedChanges {
		return nil, fmt.Errorf("%w: %d nested changesets, at most %d", ErrNestedRefused, len(r.Nested), MaxNestedChanges)
	}
	inline := 0
	for _, n := range r.Nested {
		inline += len(n.Patch)
	}
	if inline > MaxNestedInline {
		return nil, fmt.Errorf("%w: %d bytes of nested patches inline, at most %d", ErrNestedRefused, inline, MaxNestedInline)
	}
	var ok []NestedChanges
	var bad []string
	for _, n := range r.Nested {
		if err := n.check(r.Run); err != nil {
			bad = append(bad, err.Error())
			continue
		}
		ok = append(ok, n)
	}
	if len(bad) > 0 {
		return ok, fmt.Errorf("%w: %s", ErrNestedRefused, strings.Join(bad, "; "))
	}
	return ok, nil
}

// check checks one nested changeset of run's result.
func (n *NestedChanges) check(run string) error {
	if !PathSafeID(n.Agent) {
		return fmt.Errorf("agent %q is not a file name", clipID(n.Agent))
	}
	switch n.Status {
	case ChangeStatusConflict, ChangeStatusPatch:
	default:
		return fmt.Errorf("%s: status %q (want conflict or patch)", n.Agent, clipID(n.Status))
	}
	if len(n.Files) == 0 || len(n.Files) > MaxNestedFiles || len(n.Conflicts) > len(n.Files) {
		return fmt.Errorf("%s: %d files and %d conflicts (want 1 to %d files, no more conflicts than files)",
			n.Agent, len(n.Files), len(n.Conflicts), MaxNestedFiles)
	}
	for _, p := range append(n.Files[:len(n.Files):len(n.Files)], n.Conflicts...) {
		if !localPath(p) {
			return fmt.Errorf("%s: path %q leaves the repository", n.Agent, clipID(p))
		}
	}
	switch {
	case (len(n.Patch) == 0) == (n.PatchRef == ""):
		return fmt.Errorf("%s: wants either a patch or a patch_ref", n.Agent)
	case n.PatchRef != "":
		if err := checkObjectName("patch_ref", n.PatchRef); err != nil || !strings.HasPrefix(n.PatchRef, run+"/") {
			return fmt.Errorf("%s: patch_ref %q is not an object of run %s", n.Agent, clipID(n.PatchRef), run)
		}
	}
	if err := checkDigestField("patch_sha256", n.PatchSHA256); err != nil {
		return fmt.Errorf("%s: %w", n.Agent, err)
	}
	return nil
}

// PathSafeID reports whether an agent ID may name a file: a single
// printable token of at most 128 bytes with no slash, backslash or dot
// (so neither ".." nor a leading dot).
func PathSafeID(s string) bool {
	return len(s) <= maxAgentIDLen && checkID("agent", s) == nil && !strings.ContainsAny(s, `/\:`)
}

// clipID shortens a refused value for an error text.
func clipID(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
