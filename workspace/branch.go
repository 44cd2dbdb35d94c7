package workspace

import (
	"context"
	"fmt"
	"os"
	"strings"
)

// With --changes branch an agent's changes become a branch the user can
// merge: troupe/<run8>/<agent> (the run's ID cut to 8 characters),
// directly on the user's HEAD when the workspace had no uncommitted
// changes at the snapshot, else on one commit "uncommitted changes at
// snapshot" holding them. Its commits carry the user's identity (their
// git config's user.name and user.email, or GIT_AUTHOR_* and
// GIT_COMMITTER_* of the environment, as git takes them) and the real
// time; their messages name the run and the agent. Snapshot commits
// (refs troupe keeps in its home) stay fixed and reproducible.

// branch commits tree as the agent's branch and returns its name.
func (r *Repo) branch(ctx context.Context, snap Snapshot, tree, run, agent string) (string, error) {
	g := r.g
	g.identity = r.userIdentity(ctx)
	parent := snap.Base
	if parent == "" || r.treeOf(ctx, parent) != snap.Tree {
		msg := "troupe: uncommitted changes at snapshot\n\nThe workspace's changes not yet committed when run " + run +
			" started agent " + agent + ".\n"
		args := []string{"commit-tree", snap.Tree, "-m", msg}
		if parent != "" {
			args = append(args, "-p", parent)
		}
		c, err := g.line(ctx, args...)
		if err != nil {
			return "", err
		}
		parent = c
	}
	msg := "troupe: changes of " + agent + "\n\nRun: " + run + "\nAgent: " + agent + "\n"
	commit, err := g.line(ctx, "commit-tree", tree, "-p", parent, "-m", msg)
	if err != nil {
		return "", err
	}
	name := "troupe/" + shortRun(run) + "/" + agent
	if _, err := r.g.line(ctx, "check-ref-format", "--branch", name); err != nil {
		return "", fmt.Errorf("branch %q: %w", name, err)
	}
	// The ref is the user's: written in their repository by update-ref,
	// whose only program, the reference-transaction hook, is off.
	if _, err := r.refs.run(ctx, nil, "update-ref", "refs/heads/"+name, commit); err != nil {
		return "", err
	}
	return name, nil
}

// shortRun is a run's ID as a branch name holds it: its first 8 characters.
func shortRun(run string) string {
	if len(run) > 8 {
		return run[:8]
	}
	return run
}

// treeOf is the tree of commit c ("" when it cannot be read).
func (r *Repo) treeOf(ctx context.Context, c string) string {
	t, err := r.g.line(ctx, "rev-parse", "--verify", "-q", c+"^{tree}")
	if err != nil {
		return ""
	}
	return t
}

// userIdentity is the author and committer of a branch's commits: the
// environment's GIT_AUTHOR_* and GIT_COMMITTER_* where set, else the
// user's user.name and user.email (their global and the repository's
// config: plain values, nothing runs), else troupe's; no date, so git
// takes the time now.
func (r *Repo) userIdentity(ctx context.Context) []string {
	g := r.refs
	g.userGlobal = true
	conf := func(key string) string {
		out, code, err := g.runCode(ctx, nil, "config", "--get", key)
		if err != nil || code != 0 {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	name, email := conf("user.name"), conf("user.email")
	if name == "" {
		name = "troupe"
	}
	if email == "" {
		email = "troupe@localhost"
	}
	var id []string
	for _, role := range []string{"AUTHOR", "COMMITTER"} {
		n, e := name, email
		if v := os.Getenv("GIT_" + role + "_NAME"); v != "" {
			n = v
		}
		if v := os.Getenv("GIT_" + role + "_EMAIL"); v != "" {
			e = v
		}
		id = append(id, "GIT_"+role+"_NAME="+n, "GIT_"+role+"_EMAIL="+e)
	}
	return id
}
