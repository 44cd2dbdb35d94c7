package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Snapshots cross machines as git bundles. The requester bundles a
// snapshot commit (Bundle); a node fetches it into a store of its own
// (OpenStore) that borrows, read only, the objects of the node's
// checkout, and materialises worktrees from there. The node's checkout
// is never written.

// Bundle returns a git bundle of snap's commit: with thin, only the
// objects its base commit lacks (the base is the bundle's prerequisite);
// else the commit with its whole history. Our refs stay in a transfer
// repository under the data directory that borrows the workspace's
// objects: the user's refs are not touched.
func (r *Repo) Bundle(ctx context.Context, snap Snapshot, thin bool) ([]byte, error) {
	unlock, err := r.lock("transfer")
	if err != nil {
		return nil, fmt.Errorf("bundle snapshot: %w", err)
	}
	defer unlock()
	tg, err := r.transferRepo(ctx)
	if err != nil {
		return nil, fmt.Errorf("bundle snapshot: %w", err)
	}
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

// transferRepo is git in the transfer repository, created the first time.
func (r *Repo) transferRepo(ctx context.Context) (git, error) {
	dir := filepath.Join(r.dataDir, "transfer.git")
	objects, err := r.objectsDir(ctx)
	if err != nil {
		return git{}, err
	}
	return initBorrowing(ctx, dir, objects)
}

// objectsDir is the absolute path of the repository's object directory.
func (r *Repo) objectsDir(ctx context.Context) (string, error) {
	if r.private {
		return filepath.Join(r.g.gitDir, "objects"), nil
	}
	return r.g.line(ctx, "rev-parse", "--path-format=absolute", "--git-path", "objects")
}

// initBorrowing creates (once) a bare repository at dir whose object
// lookups fall back on the object directory borrow (git alternates; ""
// borrows nothing), and returns git there.
//
// Processes sharing the data directory (nodes on one checkout) take turns:
// two git inits of one repository collide on its config lock.
func initBorrowing(ctx context.Context, dir, borrow string) (git, error) {
	g := git{dir: filepath.Dir(dir), gitDir: dir}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return git{}, err
	}
	unlock, err := flock(dir + ".lock")
	if err != nil {
		return git{}, err
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if _, err := (git{dir: filepath.Dir(dir)}).run(ctx, nil, "init", "-q", "--bare", dir); err != nil {
			return git{}, err
		}
	}
	alt := filepath.Join(dir, "objects", "info", "alternates")
	if borrow == "" {
		_ = os.Remove(alt)
		return g, nil
	}
	if cur, err := os.ReadFile(alt); err == nil && strings.TrimSpace(string(cur)) == borrow {
		return g, nil
	}
	if err := os.MkdirAll(filepath.Dir(alt), 0o755); err != nil {
		return git{}, err
	}
	return g, os.WriteFile(alt, []byte(borrow+"\n"), 0o644)
}

// OpenStore opens (creating it the first time) a store of snapshots
// received from elsewhere, under dataDir: a bare repository that borrows
// the objects of the git checkout at borrow ("" or a directory that is
// not a checkout: none), so a snapshot whose base the checkout has needs
// only its own objects. Worktrees of the store live under dataDir too;
// keepIdle of them are kept for reuse (Options.KeepIdle).
func OpenStore(ctx context.Context, dataDir, borrow string, keepIdle int) (*Repo, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	objects := ""
	if borrow != "" {
		if out, err := (git{dir: borrow}).line(ctx, "rev-parse", "--path-format=absolute", "--git-path", "objects"); err == nil {
			objects = out
		} else if errors.Is(err, ErrNoGit) {
			return nil, fmt.Errorf("open snapshot store: %w", err)
		}
	}
	bare := filepath.Join(abs, "store.git")
	if _, err := initBorrowing(ctx, bare, objects); err != nil {
		return nil, fmt.Errorf("open snapshot store: %w", err)
	}
	r := &Repo{root: abs, top: abs, dataDir: abs, opts: Options{DataDir: abs, MaxBytes: DefaultMaxBytes, KeepIdle: keepIdle}, private: true,
		g: git{dir: abs, gitDir: bare}, admin: git{dir: abs, gitDir: bare}, lockDir: bare}
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
	dir := filepath.Join(r.dataDir, "tmp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	f, err := os.CreateTemp(dir, "bundle-*")
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
	// git checks the bundle against every ref, each worktree's HEAD
	// included, and one that another process is adding has a placeholder
	// HEAD ("bad object"): nodes sharing a data directory share the store.
	unlock, err := r.lock("worktree")
	if err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	defer unlock()
	if _, err := r.g.run(ctx, nil, "bundle", "unbundle", f.Name()); err != nil {
		return fmt.Errorf("unbundle: %w", err)
	}
	return nil
}
