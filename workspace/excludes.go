package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// What a snapshot holds is decided by git's ignore rules exactly as the
// user's git status applies them: every .gitignore in the tree, the
// repository's info/exclude (copied into the home, home.go) and the
// user's global ignore file: core.excludesFile of the user's global
// config, or by default $XDG_CONFIG_HOME/git/ignore (~/.config/git/ignore).
// troupe's git reads no global config (git.go), so the global ignore
// file is found once when a Repo opens, from the user's global config
// (trusted: the user's own; a repository's local config is not read for
// it), and its patterns are copied, before troupe's own rules for its
// data directory, into the one ignore file troupe's git reads
// (core.excludesFile, in the home), refreshed at every snapshot. Patterns
// in it have the lowest precedence, as the user's global ones have.

// userExcludesFile is the path of the user's global ignore file, as git
// finds it: core.excludesFile from the user's global config (includes
// followed, ~ expanded), else $XDG_CONFIG_HOME/git/ignore, else
// $HOME/.config/git/ignore; "" when there is no home to find it in.
// Reading a config value runs nothing.
func (r *Repo) userExcludesFile(ctx context.Context) string {
	g := r.refs
	g.userGlobal = true
	out, code, err := g.runCode(ctx, nil, "config", "--global", "--includes", "--type=path", "-z", "--get", "core.excludesFile")
	if err == nil && code == 0 {
		if p, _, _ := strings.Cut(string(out), "\x00"); p != "" {
			return p
		}
	}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		return filepath.Join(x, "git", "ignore")
	}
	if h := os.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "git", "ignore")
	}
	return ""
}

// readUserExcludes returns the patterns of the user's global ignore file
// (none when it is missing or unreadable, as git takes it), at most
// maxMirrored bytes.
func (r *Repo) readUserExcludes() []byte {
	if r.userIgnore == "" {
		return nil
	}
	f, err := os.Open(r.userIgnore)
	if err != nil {
		return nil
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMirrored))
	if err != nil {
		return nil
	}
	return data
}

// troupeRules are the ignore rules that keep the data directory (and
// any .troupe directory at the top) out of snapshots and captures. An
// ignore rule, unlike an exclude pathspec, is not an error when the
// user's own .gitignore names the directory too.
func (r *Repo) troupeRules() string {
	rules := "/.troupe/\n"
	if rel, err := filepath.Rel(r.top, r.dataDir); err == nil && !strings.HasPrefix(rel, "..") && rel != "." && rel != ".troupe" {
		rules += "/" + filepath.ToSlash(rel) + "/\n"
	}
	return rules
}

// writeExcludes writes the ignore file troupe's git reads (the user's
// global patterns, then troupe's rules) in the home, and makes r's git
// commands read it (core.excludesFile). Its name depends only on what
// decides its contents' source, so r's commands name it once and a
// later refresh rewrites it in place.
func (r *Repo) writeExcludes() error {
	rules := r.troupeRules()
	sum := sha256.Sum256([]byte(rules + "\x00" + r.userIgnore))
	r.excludes = filepath.Join(r.home.dir, "info", "troupe-excludes-"+hex.EncodeToString(sum[:6]))
	if err := r.refreshExcludes(); err != nil {
		return err
	}
	r.g.conf = []string{"-c", "core.excludesFile=" + r.excludes}
	return nil
}

// refreshExcludes rewrites the ignore file when the user's global
// patterns changed.
func (r *Repo) refreshExcludes() error {
	if r.excludes == "" {
		return nil
	}
	data := r.readUserExcludes()
	var b strings.Builder
	if len(data) > 0 {
		b.WriteString("# the user's global ignore file, ")
		b.WriteString(strings.ReplaceAll(r.userIgnore, "\n", " "))
		b.WriteString("\n")
		b.Write(data)
		if data[len(data)-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	b.WriteString("# troupe's own\n")
	b.WriteString(r.troupeRules())
	if err := writeIfChanged(r.excludes, []byte(b.String())); err != nil {
		return fmt.Errorf("write excludes: %w", err)
	}
	return nil
}
