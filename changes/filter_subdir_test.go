package changes

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/messages"
)

// seven is f.rev as the user sees it.
const seven = "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"

// filteredInSubdirectory makes a repository whose workspace is its svc
// directory, f.rev there going through the user's filter (rev, which
// reverses each line, in the user's global config for the test), and
// returns the repository and the workspace.
func filteredInSubdirectory(t *testing.T) (repo, ws string) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	global := filepath.Join(home, ".gitconfig")
	if err := os.WriteFile(global, []byte("[filter \"rev\"]\n\tclean = rev\n\tsmudge = rev\n\trequired\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GIT_CONFIG_GLOBAL", global)
	repo = gitRepo(t, map[string]string{"svc/.gitattributes": "*.rev filter=rev\n", "svc/f.rev": seven, "README": "top\n"})
	if got := testfiles.Git(t, repo, "cat-file", "-p", "HEAD:svc/f.rev"); got+"\n" == seven {
		t.Fatal("the filter did not clean f.rev when it was committed")
	}
	return repo, filepath.Join(repo, "svc")
}

// A workspace in a subdirectory of its repository, a file there going
// through the user's filter: a remote agent's edit of it lands as a local
// agent's does (the land reads the file's HEAD version under the
// workspace's directory), not refused and kept as a patch.
func TestRemoteEditOfAFilteredFileInASubdirectoryLands(t *testing.T) {
	req, ws := filteredInSubdirectory(t)
	node := filepath.Join(t.TempDir(), "node")
	testfiles.Git(t, filepath.Dir(node), "clone", "-q", req, node)
	ctx := context.Background()
	tr, snap := requesterSnapshot(t, ws)
	if snap.Prefix != "svc/" {
		t.Fatalf("snapshot prefix %q", snap.Prefix)
	}
	n := NewNode(Dirs{Root: filepath.Join(node, "svc"), Data: filepath.Join(node, ".troupe", "snapshots"), State: t.TempDir()}, 2, 0, zerolog.Nop())
	t.Cleanup(n.Close)
	h, err := n.Start(ctx, tr, snap, "r1-w1-0")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(h.Root(), "f.rev")); string(got) != seven {
		if os.Getenv("CI") != "true" && strings.Contains(string(got), "eno") {
			t.Skip("the filters cannot run confined on this machine: the worktree holds the clean form")
		}
		t.Fatalf("the node's worktree holds f.rev %q, want the smudged form", got)
	}
	edited := strings.Replace(seven, "six", "SIX", 1)
	write(t, h.Root(), "f.rev", edited)
	cs, err := h.End(ctx, tr, true, "r1", "w1")
	if err != nil || cs == nil {
		t.Fatalf("changeset %+v %v", cs, err)
	}
	r := openRun(t, ws, "worktree")
	out, why := r.bringRemote(nil, "r1", "w1", true, Remote{Node: "n1", Changeset: cs})
	if why != "" || out == nil || out.Status != messages.ChangeStatusApplied {
		t.Fatalf("outcome %+v, refusal %q", out, why)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "f.rev")); string(got) != edited {
		t.Errorf("the workspace's f.rev %q, want the edit in its smudged form", got)
	}
}

// The same edit by a local agent lands too (a land took the file's path
// as the workspace's and looked for svc/svc/f.rev in HEAD: every edit of
// a filtered file in a subdirectory workspace was refused as a conflict).
func TestLocalEditOfAFilteredFileInASubdirectoryLands(t *testing.T) {
	_, ws := filteredInSubdirectory(t)
	r := openRun(t, ws, "worktree")
	lead := enterChild(t, r, nil, "lead-1", true)
	if got, _ := os.ReadFile(filepath.Join(lead.Root(), "f.rev")); string(got) != seven {
		if os.Getenv("CI") != "true" && strings.Contains(string(got), "eno") {
			t.Skip("the filters cannot run confined on this machine: the worktree holds the clean form")
		}
		t.Fatalf("the worktree holds f.rev %q, want the smudged form", got)
	}
	edited := strings.Replace(seven, "six", "SIX", 1)
	write(t, lead.Root(), "f.rev", edited)
	out := lead.End(context.Background(), Ending{Completed: true})
	if out.Changes == nil || out.Changes.Status != messages.ChangeStatusApplied {
		t.Fatalf("the end: %+v %+v", out, out.Changes)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "f.rev")); string(got) != edited {
		t.Errorf("the workspace's f.rev %q, want the edit in its smudged form", got)
	}
}
