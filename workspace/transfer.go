package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// Snapshots cross machines as git bundles. The requester bundles a
// snapshot commit (Bundle); a node fetches it into a store of its own
// (OpenStore) that borrows, read only, the objects of the node's
// checkout, and materialises worktrees from there. The node's checkout
// is never written, and its config never read but for its object
// directory and format.

// Bundle writes a git bundle of snap's commit to a private temporary
// file of the home's (BundleFile; its user removes it): with thin, only
// the objects its base commit lacks (the base is the bundle's
// prerequisite); else the commit with its whole history. git's output
// is streamed to the file, its SHA-256 and length taken on the way: no
// buffer of ours holds the bundle whole, whatever the snapshot's size.
// Our refs stay in the home, which borrows the workspace's objects: the
// user's refs are not touched.
func (r *Repo) Bundle(ctx context.Context, snap Snapshot, thin bool) (BundleFile, error) {
	unlock, err := r.lock("transfer")
	if err != nil {
		return BundleFile{}, fmt.Errorf("bundle snapshot: %w", err)
	}
	defer unlock()
	tg := r.home.git()
	ref := "refs/troupe/snapshot/" + snap.Commit
	if _, err := tg.run(ctx, nil, "update-ref", ref, snap.Commit); err != nil {
		return BundleFile{}, fmt.Errorf("bundle snapshot: %w", err)
	}
	defer func() { _, _ = tg.run(context.WithoutCancel(ctx), nil, "update-ref", "-d", ref) }()
	args := []string{"bundle", "create", "-q", "-", ref}
	if thin && snap.Base != "" {
		args = append(args, "^"+snap.Base)
	}
	b, err := r.spoolBundle(func(w io.Writer) error {
		cmd, err := tg.command(ctx, args...)
		if err != nil {
			return err
		}
		var stderr strings.Builder
		cmd.Stdout, cmd.Stderr = w, &limitedWriter{w: &stderr, n: 4 << 10}
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return nil
	})
	if err != nil {
		return BundleFile{}, fmt.Errorf("bundle snapshot: %w", err)
	}
	return b, nil
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

// Unbundle adds the objects of the git bundle b (of Bundle, or
// spooled by UnbundleFrom) to the repository. A bundle whose
// prerequisites the repository lacks is refused.
func (r *Repo) Unbundle(ctx context.Context, b BundleFile) error {
	// Nodes sharing a data directory share the store: one unbundles at a time.
	unlock, err := r.lock("worktree")
	if err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	defer unlock()
	if err := r.mirrorShallow(); err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	if _, err := r.g.run(ctx, nil, "bundle", "unbundle", b.Path); err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	return nil
}

// UnbundleFrom streams a git bundle from src (fetched from the wire)
// into a private temporary file of the home's, its SHA-256 taken on the
// way, and adds its objects to the repository (Unbundle) only if they
// are the bytes digest names: otherwise (or without a digest) git never
// sees them, nothing is added, and the error (messages.ErrDigest) names
// the bundle as what does. The file is removed in every case.
func (r *Repo) UnbundleFrom(ctx context.Context, what string, src io.Reader, digest string) error {
	if digest == "" {
		return messages.CheckDigest(what, nil, "")
	}
	b, err := r.spoolBundle(func(w io.Writer) error {
		// A read takes an object store chunk (128 KiB) or two whole.
		_, err := io.CopyBuffer(w, src, make([]byte, 256<<10))
		return err
	})
	if err != nil {
		return fmt.Errorf("get %s: %w", what, err)
	}
	defer b.Remove()
	if b.SHA256 != digest {
		return fmt.Errorf("%w: %s has SHA-256 %.16s…, its proven message names %.16s…", messages.ErrDigest, what, b.SHA256, digest)
	}
	return r.Unbundle(ctx, b)
}
