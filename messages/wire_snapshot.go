package messages

import (
	"fmt"
	"path"
	"strings"
)

// TaskSnapshot is the requester's workspace as a remote agent is to see
// it: a snapshot commit (the base commit plus every uncommitted change,
// untracked files included) stored as a git bundle in the run's snapshot
// bucket. The bundle's only prerequisite is Base; a node that lacks Base
// asks for the whole snapshot with a SnapshotRequest.
type TaskSnapshot struct {
	// Commit is the snapshot commit; Tree its tree.
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
	// Base is the commit checked out in the requester's workspace ("" in
	// a workspace that is not a git checkout).
	Base string `json:"base,omitempty"`
	// Prefix is the workspace's directory in its repository, slash-
	// separated with a trailing slash ("" at the top).
	Prefix string `json:"prefix,omitempty"`
	// Bundle is the object in the snapshot bucket holding the snapshot
	// commit's objects that Base does not have.
	Bundle string `json:"bundle"`
	// BundleSHA256 is the bundle's SHA-256 (Digest): a node checks the
	// bundle it fetched against it before unbundling.
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
}

// Validate checks a task's snapshot reference.
func (s *TaskSnapshot) Validate() error {
	if s == nil {
		return nil
	}
	for _, f := range []struct{ what, v string }{{"commit", s.Commit}, {"tree", s.Tree}, {"base", s.Base}} {
		if f.v == "" && f.what == "base" {
			continue
		}
		if !isObjectID(f.v) {
			return fmt.Errorf("%w: snapshot %s %q is not a git object ID", ErrBadMessage, f.what, f.v)
		}
	}
	if s.Prefix != "" && (!strings.HasSuffix(s.Prefix, "/") || !localPath(strings.TrimSuffix(s.Prefix, "/"))) {
		return fmt.Errorf("%w: snapshot prefix %q is not a relative directory", ErrBadMessage, s.Prefix)
	}
	if err := checkObjectName("snapshot bundle", s.Bundle); err != nil {
		return err
	}
	return checkDigestField("snapshot bundle_sha256", s.BundleSHA256)
}

// SnapshotRequest asks the requester for a whole snapshot (every object
// of its commit's history), for a node that lacks the snapshot's base
// commit: <prefix>.ctl.<run>.<agent>.snapshot.
type SnapshotRequest struct {
	V      int    `json:"v"`
	Commit string `json:"commit"`
}

// Validate checks a snapshot request.
func (r *SnapshotRequest) Validate() error {
	if err := checkVersion("snapshot request", r.V); err != nil {
		return err
	}
	if !isObjectID(r.Commit) {
		return fmt.Errorf("%w: snapshot request: commit %q is not a git object ID", ErrBadMessage, r.Commit)
	}
	return nil
}

// SnapshotReply names the object holding the whole snapshot as a bundle
// with no prerequisites, or says why there is none.
type SnapshotReply struct {
	V      int    `json:"v"`
	Bundle string `json:"bundle,omitempty"`
	// BundleSHA256 is the bundle's SHA-256 (Digest), checked by the node
	// before it unbundles.
	BundleSHA256 string `json:"bundle_sha256,omitempty"`
	Error        *Error `json:"error,omitempty"`
}

// Validate checks a snapshot reply.
func (r *SnapshotReply) Validate() error {
	if err := checkVersion("snapshot reply", r.V); err != nil {
		return err
	}
	if r.Error == nil {
		if err := checkObjectName("snapshot bundle", r.Bundle); err != nil {
			return err
		}
		return checkDigestField("snapshot bundle_sha256", r.BundleSHA256)
	}
	return nil
}

// validate checks a changeset carried by a result: object IDs, and paths
// that stay inside the repository.
func (c *Changeset) validate() error {
	if c == nil {
		return nil
	}
	if c.Snapshot != "" && !isObjectID(c.Snapshot) || c.Tree != "" && !isObjectID(c.Tree) ||
		c.SnapshotTree != "" && !isObjectID(c.SnapshotTree) {
		return fmt.Errorf("%w: changeset: snapshot or tree is not a git object ID", ErrBadMessage)
	}
	for _, f := range c.Files {
		if !localPath(f.Path) {
			return fmt.Errorf("%w: changeset: path %q leaves the repository", ErrBadMessage, f.Path)
		}
	}
	for _, f := range c.Oversize {
		if !localPath(f.Path) || f.Bytes < 0 {
			return fmt.Errorf("%w: changeset: oversize file %q (%d bytes) is not a file of the repository", ErrBadMessage, f.Path, f.Bytes)
		}
	}
	for _, o := range c.LFS {
		if !ValidLFSOID(o.OID) || o.Size < 0 {
			return fmt.Errorf("%w: changeset: git lfs object %q (%d bytes) is not a SHA-256 and a size", ErrBadMessage, o.OID, o.Size)
		}
	}
	if len(c.LFS) > len(c.Files) {
		return fmt.Errorf("%w: changeset: %d git lfs objects for %d files", ErrBadMessage, len(c.LFS), len(c.Files))
	}
	if c.Pack && c.Tree == "" {
		return fmt.Errorf("%w: changeset: a pack without the tree it makes", ErrBadMessage)
	}
	if c.PatchRef != "" {
		if err := checkObjectName("changeset patch", c.PatchRef); err != nil {
			return err
		}
	}
	return checkDigestField("changeset patch_sha256", c.PatchSHA256)
}

// isObjectID reports whether s is a full git object ID (SHA-1 or SHA-256).
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f') {
			return false
		}
	}
	return true
}

// localPath reports whether p is a clean, relative, slash-separated path
// that stays where it is put.
func localPath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && path.Clean(p) == p && p != "." && p != ".." &&
		!strings.HasPrefix(p, "../") && !strings.ContainsAny(p, "\\\x00")
}

// checkObjectName refuses an object store name that is not
// <run>/<name> of printable characters without spaces.
func checkObjectName(what, s string) error {
	run, name, ok := strings.Cut(s, "/")
	if !ok || checkID("run", run) != nil || name == "" || strings.ContainsAny(name, "/ *>") || !PrintableID(name) {
		return fmt.Errorf("%w: %s %q is not <run>/<name>", ErrBadMessage, what, s)
	}
	return nil
}
