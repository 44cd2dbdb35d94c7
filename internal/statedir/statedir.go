// Package statedir draws the line between what troupe trusts and what
// agents touch. A workspace (and everything beneath it, its .troupe folder
// included) is agent-writable: its commands and file tools write there.
// What troupe must trust of a workspace — NATS seeds and credentials, the
// embedded server's store, task secrets, checkpoints and journals, kept
// patches, the index of spilled outputs — lives outside it instead, in a
// per-user state directory:
//
//	$XDG_STATE_HOME/troupe/<workspace id>/   (default ~/.local/state/troupe/...)
//
// made 0700 (its files 0600), which the sandbox denies reading as a whole.
// What stays in the workspace's .troupe folder (worktrees, the spilled
// outputs agents read) is agent-visible by design: troupe opens it
// through the helpers here, never following a symbolic link in it, and
// gives it a .gitignore holding "*" so that git status in the user's
// repository never lists it.
package statedir

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNoHome: neither XDG_STATE_HOME nor a home directory says where the
// state directory is.
var ErrNoHome = errors.New("statedir: no state directory: set XDG_STATE_HOME or HOME")

// Root is the directory holding every workspace's state:
// $XDG_STATE_HOME/troupe, else <home>/.local/state/troupe. A relative
// XDG_STATE_HOME is ignored, as the XDG specification says.
func Root(getenv func(string) string, home string) (string, error) {
	if x := getenv("XDG_STATE_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "troupe"), nil
	}
	if home == "" {
		return "", ErrNoHome
	}
	return filepath.Join(home, ".local", "state", "troupe"), nil
}

// DefaultRoot is Root from this process's environment and home.
func DefaultRoot() (string, error) {
	home, _ := os.UserHomeDir()
	return Root(os.Getenv, home)
}

// GitRoot is where troupe keeps the git directories its own git commands
// run against (workspace's homes): $XDG_STATE_HOME/troupe-git, else
// <home>/.local/state/troupe-git. Beside Root, not in it: an agent's git
// in its worktree reads its home (the worktree's admin files, the
// alternates naming the objects), while Root is denied to agents whole;
// like Root it is the user's alone, where no agent may write.
func GitRoot(getenv func(string) string, home string) (string, error) {
	root, err := Root(getenv, home)
	if err != nil {
		return "", err
	}
	return root + "-git", nil
}

// DefaultGitRoot is GitRoot from this process's environment and home.
func DefaultGitRoot() (string, error) {
	home, _ := os.UserHomeDir()
	return GitRoot(os.Getenv, home)
}

// ID names a workspace's state directory: the workspace folder's name and
// the start of the SHA-256 of its absolute path, symlinks resolved (so the
// same folder reached two ways shares its state).
func ID(workspace string) string {
	p := workspace
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	sum := sha256.Sum256([]byte(p))
	base := filepath.Base(p)
	if base == string(filepath.Separator) {
		base = ""
	}
	name := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r == '.' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9') {
			return r
		}
		return '_'
	}, base)
	name = strings.TrimLeft(name, ".")
	if len(name) > 40 {
		name = name[:40]
	}
	if name == "" {
		name = "root"
	}
	return name + "-" + hex.EncodeToString(sum[:8])
}

// For is the state directory of workspace under DefaultRoot.
func For(workspace string) (string, error) {
	root, err := DefaultRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, ID(workspace)), nil
}

// Make creates dir, and the parents it lacks, private to the user (0700),
// and narrows dir to 0700 when it exists wider.
func Make(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("state directory: %w", err)
		}
	}
	return nil
}

// Inside reports whether dir is workspace or lies beneath it (both
// made absolute; symlinks of their existing parts resolved).
func Inside(workspace, dir string) bool {
	w, d := realAbs(workspace), realAbs(dir)
	rel, err := filepath.Rel(w, d)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// realAbs is p absolute with the symlinks of its longest existing prefix
// resolved.
func realAbs(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	rest := ""
	for cur := p; ; cur = filepath.Dir(cur) {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		if cur == filepath.Dir(cur) {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
	}
}
