package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Snapshots cross machines as git bundles. The requester bundles a
// snapshot commit (Bundle); a node fetches it into a store of its own
// (OpenStore) that borrows, read only, the objects of the node's
// checkout, and materialises worktrees from there. The node's checkout
// is never written, and its config never read but for its object
// directory and format.

// Bundle returns a git bundle of snap's commit: with thin, only the
// objects its base commit lacks (the base is the bundle's prerequisite);
// else the commit with its whole history. Our refs stay in the home,
// which borrows the workspace's objects: the user's refs are not
// touched.
func (r *Repo) Bundle(ctx context.Context, snap Snapshot, thin bool) ([]byte, error) {
	unlock, err := r.lock("transfer")
	if err != nil {
		return nil, fmt.Errorf("bundle snapshot: %w", err)
	}
	defer unlock()
	tg := r.home.git()
	ref := "refs/troupe/snapshot/" + snap.Commit
	if _, err := tg.run(ctx, nil, "update-ref", ref, snap.Commit); err != nil {
		return nil, fmt.Errorf("bundle snapshot: %w", err)
	}
	defer func() { _, _ = tg.run(context.WithoutCancel(ctx), nil, "update-ref", "-d", ref) }()
	args := []string{"bundle", "create", "-q", "-", ref}
	if thin && snap.Base != "" {
		args = append(args, "^"+snap.Base)
	}
	out, err := tg.run(ctx, nil, args...)
	if err != nil {
		return nil, fmt.Errorf("bundle snapshot: %w", err)
	}
	return out, nil
}

// OpenStore opens (creating it the first time) a store of snapshots
// received from elsewhere, under dataDir: the object directory of
// store.git, which borrows the objects of the git checkout at borrow (""
// or a directory that is not a checkout: none), so a snapshot whose base
// the checkout has needs only its own objects. Worktrees of the store
// live under dataDir too; keepIdle of them are kept for reuse
// (Options.KeepIdle). Its git commands run in a home (home.go), as a
// workspace's do.
func OpenStore(ctx context.Context, dataDir, borrow string, keepIdle int) (*Repo, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	r, err := blankRepo(abs, abs, Options{DataDir: abs, KeepIdle: keepIdle})
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	r.private = true
	var borrowed []string
	format := "sha1"
	if borrow != "" {
		if f, err := discover(ctx, findGit(borrow), borrow); err == nil {
			borrowed, format, r.shallowOf = []string{f.objects}, f.format, f.common
		} else if errors.Is(err, ErrNoGit) {
			return nil, fmt.Errorf("open snapshot store: %w", err)
		}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	objects, err := r.makeObjects("store.git")
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	if r.home, err = openHome("", objects, borrowed, format, nil, r.tool, borrow); err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	r.g = r.home.git()
	// The node's user's filter drivers (git lfs's, as git lfs install
	// wrote them) check out and clean its worktrees, confined, as the
	// user's own checkout would (checkout_filters.go): a worker sees an
	// LFS file's content. Line endings stay git's defaults.
	uc := r.readUserConv(ctx)
	r.conv = userConv{filters: uc.filters, drivers: uc.drivers}
	return r, nil
}

// Has reports whether the repository holds commit (its own objects or
// those it borrows).
func (r *Repo) Has(ctx context.Context, commit string) bool {
	_, code, err := r.g.runCode(ctx, nil, "cat-file", "-e", commit+"^{commit}")
	return err == nil && code == 0
}

// Unbundle adds the objects of a git bundle to the repository. A bundle
// whose prerequisites the repository lacks is refused.
func (r *Repo) Unbundle(ctx context.Context, bundle []byte) error {
	f, err := os.CreateTemp(r.home.tmpDir(), r.home.tmpName("bundle"))
	if err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	defer os.Remove(f.Name())
	_, err = f.Write(bundle)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	// Nodes sharing a data directory share the store: one unbundles at a time.
	unlock, err := r.lock("worktree")
	if err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	defer unlock()
	if err := r.mirrorShallow(); err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	if _, err := r.g.run(ctx, nil, "bundle", "unbundle", f.Name()); err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	return nil
}
