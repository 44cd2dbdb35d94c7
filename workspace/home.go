package workspace

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/internal/statedir"
)

// A home is the git directory troupe's own commands run against: made
// and written only by troupe, in a directory no agent may write (by
// default <per-user state>/troupe-git/<key>, see statedir.GitRoot, mode
// 0700, outside every workspace; agents' commands may write only beneath
// their workspace or worktree, their own TMPDIR and sandbox.writable).
// It holds:
//   - config: what troupe writes, and of the repository's own config only
//     the few keys that change how files are added and checked out
//     (copiedKeys), each a plain word. No filter, diff or merge driver,
//     hook, fsmonitor, pager, editor, ssh command, credential helper,
//     include or any other key naming a program can reach it, whatever
//     the agent writes into the repository's config or a worktree's
//     config.worktree;
//   - HEAD and refs of troupe's own (snapshot refs for bundles);
//   - info/exclude, info/attributes and shallow copied from the
//     repository (patterns and commit IDs: nothing they say runs);
//   - worktrees/<name>: the administrative directory of each worktree
//     troupe made, which its commands name as GIT_DIR (a worktree's .git
//     file is written for the agent's own git, never read by troupe);
//   - objects/info/alternates naming the repository's object directory,
//     so an agent's git in its worktree finds the objects (troupe's own
//     commands name it with GIT_OBJECT_DIRECTORY: objects go where they
//     went before, into the repository's store);
//   - tmp: temporary indexes and merge inputs; lock files.
//
// One home serves every process using the same object directory (its
// key is the directory's path), so their locks meet there.

// copiedKeys are the keys of a repository's config its home copies:
// they change which files git sees and how it writes them, and name no
// program.
var copiedKeys = []string{
	"core.filemode", "core.symlinks", "core.ignorecase", "core.precomposeunicode",
	"core.protecthfs", "core.protectntfs", "core.eol", "core.safecrlf", "core.checkroundtripencoding",
	"core.bigfilethreshold", "core.compression", "core.loosecompression", "core.sharedrepository",
	"index.version",
}

// plainValue is a config value a home copies: one plain word.
var plainValue = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_.+-]{0,64}$`) })

// mirrored are the files of a repository's common git directory its
// home keeps a copy of.
var mirrored = []string{"info/exclude", "info/attributes", "shallow"}

// maxMirrored bounds a mirrored file: a larger one is not copied.
const maxMirrored = 4 << 20

// home is a git directory troupe owns (see above).
type home struct {
	dir     string
	objects string   // the object directory troupe's commands write to
	borrow  []string // more object directories they read
	sha256  bool     // the object format is SHA-256
	tool    *gitTool

	mu     sync.Mutex
	copies map[string][]byte // mirrored file → what was last written
}

// homeBaseDir is where homes are made: base, or the default (beside the
// per-user state directory; <system temp>/troupe-<uid>/git only for a
// process with neither XDG_STATE_HOME nor a home directory).
func homeBaseDir(base string) string {
	if base != "" {
		return base
	}
	if dir, err := statedir.DefaultGitRoot(); err == nil {
		return dir
	}
	return filepath.Join(os.TempDir(), "troupe-"+strconv.Itoa(os.Getuid()), "git")
}

// sweepOnce sweeps stale homes once per process (sweepHomes).
var sweepOnce sync.Once

// openHome makes (or takes up) the home of the object directory objects
// under base: format is the repository's object format ("sha1",
// "sha256"), conf the repository's config (only copiedKeys are taken).
// untrusted are the directories agents may write: a home beneath one is
// refused.
func openHome(base, objects string, borrow []string, format string, conf map[string]confValue, tool *gitTool, untrusted ...string) (*home, error) {
	base = homeBaseDir(base)
	if beneathAny(base, untrusted) {
		return nil, fmt.Errorf("troupe's git directory %s is inside the workspace; set XDG_STATE_HOME to a directory agents cannot write", base)
	}
	if err := os.MkdirAll(filepath.Dir(filepath.Dir(base)), 0o700); err != nil {
		return nil, fmt.Errorf("make troupe's git directory: %w", err)
	}
	if err := ownedDir(filepath.Dir(base)); err != nil {
		return nil, err
	}
	if err := ownedDir(base); err != nil {
		return nil, err
	}
	sweepOnce.Do(func() { sweepHomes(base) })
	sum := sha256.Sum256([]byte(objects))
	h := &home{dir: filepath.Join(base, hex.EncodeToString(sum[:10])), objects: objects, borrow: borrow, tool: tool,
		sha256: format == "sha256", copies: map[string][]byte{}}
	if err := ownedDir(h.dir); err != nil {
		return nil, err
	}
	for _, d := range []string{"refs", "refs/heads", "objects", "objects/info", "info", "worktrees", "tmp"} {
		if err := os.Mkdir(filepath.Join(h.dir, d), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("make troupe's git directory: %w", err)
		}
	}
	files := map[string][]byte{
		"config":                  homeConfig(format, conf),
		"objects/info/alternates": []byte(strings.Join(append([]string{objects}, borrow...), "\n") + "\n"),
		"objects-path":            []byte(objects + "\n"),
	}
	if _, err := os.Lstat(filepath.Join(h.dir, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		files["HEAD"] = []byte("ref: refs/heads/troupe\n")
	}
	for name, data := range files {
		if err := writeIfChanged(filepath.Join(h.dir, name), data); err != nil {
			return nil, fmt.Errorf("make troupe's git directory: %w", err)
		}
	}
	return h, nil
}

// ownedDir makes dir (mode 0700) unless it exists, and checks that it is
// a directory (not a symlink) of this user that no one else may write.
func ownedDir(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("make troupe's git directory: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("make troupe's git directory: %w", err)
	}
	if !fi.IsDir() || fi.Mode().Perm()&0o022 != 0 || !ownedByUs(fi) {
		return fmt.Errorf("troupe's git directory %s is not a directory only this user may write (%v); remove it", dir, fi.Mode())
	}
	return nil
}

// homeConfig is a home's config: the repository format, bare (its work
// trees are always named), no reflogs, and the copied keys.
func homeConfig(format string, conf map[string]confValue) []byte {
	var b bytes.Buffer
	version := "0"
	if format == "sha256" {
		version = "1"
	}
	fmt.Fprintf(&b, "# Written by troupe: its own git commands read this file, never the repository's config.\n")
	fmt.Fprintf(&b, "[core]\n\trepositoryformatversion = %s\n\tbare = true\n\tlogAllRefUpdates = false\n", version)
	sections := map[string][]string{}
	var order []string
	for _, key := range copiedKeys {
		v, ok := conf[key]
		if !ok || !plainValue().MatchString(v.val) {
			continue
		}
		val := v.val
		if !v.set {
			val = "true"
		}
		sec, name, _ := strings.Cut(key, ".")
		if sections[sec] == nil {
			order = append(order, sec)
		}
		sections[sec] = append(sections[sec], fmt.Sprintf("\t%s = %s\n", name, val))
	}
	for _, sec := range order {
		if sec != "core" {
			fmt.Fprintf(&b, "[%s]\n", sec)
		}
		b.WriteString(strings.Join(sections[sec], ""))
	}
	if format == "sha256" {
		b.WriteString("[extensions]\n\tobjectformat = sha256\n")
	}
	return b.Bytes()
}

// writeIfChanged writes data to path (a temporary file renamed over it)
// unless the file holds it already.
func writeIfChanged(path string, data []byte) error {
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, data) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// mirror copies the mirrored files of the repository's common git
// directory common into the home (removing those it lacks), reading
// them without following a symlink; a copy is written only when its
// contents changed.
func (h *home) mirror(common string) error { return h.mirrorOf(common, mirrored) }

// mirrorOf is mirror of the files names.
func (h *home) mirrorOf(common string, names []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, name := range names {
		data, err := readBeneath(common, name, maxMirrored)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			data = nil // a symlink, a directory, too large: not copied
		}
		if prev, ok := h.copies[name]; ok && bytes.Equal(prev, data) {
			continue
		}
		dst := filepath.Join(h.dir, filepath.FromSlash(name))
		if data == nil {
			if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("copy %s: %w", name, err)
			}
		} else if err := writeIfChanged(dst, data); err != nil {
			return fmt.Errorf("copy %s: %w", name, err)
		}
		h.copies[name] = data
	}
	return nil
}

// mirrorRefs copies the refs of the repository refs names into the
// home's packed-refs (its own, under refs/troupe/, left out), so an
// agent's git in its worktree knows the user's branches and tags as
// they were at the last snapshot. for-each-ref reads the repository's
// config and runs nothing.
func (h *home) mirrorRefs(ctx context.Context, refs git) error {
	out, err := refs.run(ctx, nil, "for-each-ref", "--format=%(objectname) %(refname)")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("# pack-refs with: sorted \n")
	for line := range strings.Lines(string(out)) {
		if _, name, ok := strings.Cut(strings.TrimSpace(line), " "); ok && !strings.HasPrefix(name, "refs/troupe/") && !strings.ContainsAny(name, " \t") {
			b.WriteString(strings.TrimSpace(line) + "\n")
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if bytes.Equal(h.copies["packed-refs"], b.Bytes()) {
		return nil
	}
	if err := writeIfChanged(filepath.Join(h.dir, "packed-refs"), b.Bytes()); err != nil {
		return fmt.Errorf("copy refs: %w", err)
	}
	h.copies["packed-refs"] = b.Bytes()
	return nil
}

// git is git in the home: no work tree, the repository's objects.
func (h *home) git() git {
	return git{tool: h.tool, gitDir: h.dir, objects: h.objects, borrow: h.borrow}
}

// tmpDir is the home's directory for temporary files.
func (h *home) tmpDir() string { return filepath.Join(h.dir, "tmp") }

// tmpName is the pattern of a temporary file's name in tmpDir: the
// process's ID first, so what a killed process left is pruned (Prune).
func (h *home) tmpName(what string) string { return strconv.Itoa(os.Getpid()) + "-" + what + "-*" }

// sweepHomes removes the homes under base whose object directory no
// longer exists (a removed repository, a test's temporary one), leaving
// any made in the last hour.
func sweepHomes(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		dir := filepath.Join(base, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || time.Since(fi.ModTime()) < time.Hour {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, "objects-path"))
		if err != nil {
			continue
		}
		objects := strings.TrimSpace(string(data))
		if _, err := os.Lstat(objects); !errors.Is(err, fs.ErrNotExist) || slices.Contains([]string{"", "/"}, objects) {
			continue
		}
		_ = os.RemoveAll(dir)
	}
}
