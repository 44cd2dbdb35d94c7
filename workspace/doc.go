// Package workspace snapshots a workspace, materialises worktrees from a
// snapshot, captures an agent's changes as a changeset and merges them
// back into the workspace: the mechanics. When each step happens, and
// what becomes of a worktree and a changeset on an error, is package
// changes' (the policy); docs/architecture.md, "The workspace
// lifecycle", says step by step what is Go and what is git.
//
// A snapshot is the workspace as it is now: the base commit (HEAD) plus
// every difference the working tree has from it (modified, added and not
// ignored, deleted; modes and symlinks), written as a git tree and a
// commit whose parent is HEAD. It is content-addressed: two snapshots of
// the same state have the same tree. The user's index is never touched:
// every git command runs with its own GIT_INDEX_FILE. A workspace that is
// not a git checkout is snapshotted as a whole (ignore rules honoured,
// limited in size) into a private bare repository under the data
// directory.
// What is ignored is what the user's git status ignores: every
// .gitignore, the repository's info/exclude and the user's global ignore
// file (core.excludesFile of the user's global config, or
// ~/.config/git/ignore), whose patterns troupe copies into the one
// ignore file its own git reads (excludes.go); a repository's local
// config is not read for it.
//
// A worktree is a directory materialised from a snapshot, under the data
// directory, its git directory (what git worktree add --detach makes)
// made by troupe in its home (below) and renamed into place whole, so
// many agents start at once without a lock; the checkout runs in
// parallel, written in Go
// (the files by a few goroutines, then git's index with their stat data;
// materialise.go) unless attributes, configuration or submodules could
// make git's own checkout differ, which then does it. Worktrees left
// by a killed process are removed by Prune at the next start. A Repo
// keeps removed worktrees for reuse (Options.KeepIdle, Prewarm) and
// prepares them in the background for the latest snapshot, writing only
// the paths that differ (see worktree_reuse.go), so an agent's worktree
// usually costs no checkout at all.
//
// An overlay worktree (Options.Worktrees; overlay_worktree.go) costs
// what its agent touches instead: the snapshot is checked out once as a
// lower tree shared read-only by every overlay worktree of it, and each
// worktree is an overlay mount of it with an empty upper directory,
// mounted in the user and mount namespace of a holder process
// (internal/overlay). Outside that namespace the mount point is empty:
// troupe's files operations reach the merged view through
// /proc/<holder>/root (Root, Dir), and git in the worktree, troupe's
// and its agent's, runs inside the namespace (nsenter; Enter). Its
// capture scans only the directories present in the upper directory
// (overlay_capture.go), Keep copies the merged view out into a real
// directory, and a worktree kept for reuse is unmounted, emptied and
// mounted again on the next snapshot's lower tree (overlay_reuse.go).
// The mount is made by descriptor (internal/overlay), never through a
// path an agent could swap a symlink into. Auto (agent.worktrees'
// default) makes overlays where the holder's probe passes and checkouts
// elsewhere, with a note (Repo.Worktrees); overlay, forced, fails where
// the probe does. The agent's tools reach the view as an opaque root
// (tools.NewWorkspaceView) and its commands enter before their sandbox
// is made.
//
// A capture's memory does not follow the files' sizes: a changed file
// is hashed and stored in one streamed pass (capture_stream.go), and a
// file over Options.MaxChangeBytes (agent.max_change_bytes) is only
// measured, left out of the changeset and named in its Oversize
// (capture_oversize.go for git's path). A changeset landed where it was
// captured carries no patch (CaptureTree): Apply reads its tree from the
// object store and streams its patch from git where one is kept; Capture
// makes the patch for a changeset that travels. Apply's memory does not
// follow the sizes either: a file over 8 MiB on any side is decided by
// object IDs, streamed into place from git cat-file, and merged, when
// both sides changed it, by git merge-file on copies in the home
// (merge_big.go). A capture that fails keeps the patch of what could
// still be captured (Salvage). A repository feature troupe
// does not model (an extension other than the object format and
// per-worktree config, a split index) sends checkouts and captures to
// git with a note (Repo.Note); a repository git cannot read is refused
// (repo_features.go).
//
// A capture is made in Go when it can be vouched for: when a worktree is
// handed to an agent, its git index is read (index_read.go) into a
// manifest of every tracked file's mode, blob ID and stat data, checked
// to hold the snapshot's tree. Capture then lstats the directories that
// hold tracked files, hashes only files whose stat data differs or is
// racy (git's rule), asks one git ls-files which new entries are not
// ignored, and writes the changed blobs and the trees along their paths
// as loose objects: the tree git add -A and write-tree would make, with
// no git process but the diff-tree that makes the patch, and the
// worktree's index untouched (so what its agent staged or committed does
// not count). Attributes, configuration that changes how git adds files,
// submodules, an index the reader does not take, or any error, and git
// does it as before. A kept worktree is restored in Go from the same
// comparison (worktree_restore.go).
//
// Applies read trees and blobs through one long-lived git cat-file per
// Repo and diff trees in Go, so a clean merge of files no attribute or
// setting converts starts no git process.
//
// A changeset is an agent's changes relative to its snapshot: a binary-safe
// patch (git diff --binary) and the changed files with their added and
// deleted line counts. Apply merges a changeset into the workspace three
// ways, file by file, against the snapshot: the base is the snapshot's
// blob, ours the file as it is now in the workspace, theirs the agent's
// blob. The merge is on blobs: where git would convert a file between
// its blob and its form on disk (eol, text with the user's core.autocrlf,
// ident, encodings), ours is read through git's clean rules and the
// result written through git's checkout conversion (merge_convert.go);
// a clean/smudge filter of the user's global config runs in the OS
// sandbox (filter_confined.go), a process filter too, spoken to in git's
// long-running filter protocol (filter_process.go); a worktree is
// checked out through those filters, and its capture cleans what it
// changed of those files (checkout_filters.go). A merge whose changes
// may hold a rename goes to git merge-tree with rename detection, ours
// the work tree's tree written through an index kept from one land to
// the next and brought up to date (merge_renames.go,
// merge_renames_view.go). Each file is decided as git merge-tree
// decides it (merge_git_test.go holds the two equal). Changes to different
// files or to different regions of one file merge (git merge-file); an
// overlap with a change applied before or with an edit the user made
// meanwhile is a conflict, and then nothing is written: the changeset is
// kept as a patch file that applies cleanly to the snapshot. A changeset
// that merges is written all or nothing (land.go): temporary names and
// pre-images beside each file and a journal in troupe's home, so
// an I/O error rolls back (status error, the patch kept) and a land
// killed half-way is rolled back or finished by the next Open or Apply.
// Applies are serialised per repository, in the order they are asked
// for.
//
// The agent is untrusted: it writes the work tree, and may write the
// repository's config, hooks and attributes, a worktree's .git file, a
// repository of its own, and the data directory when it lies in the
// workspace. So troupe's git never runs a program any of them names
// (git.go, home.go): every command names its repository and work tree
// explicitly (GIT_DIR, GIT_WORK_TREE; a worktree's git directory is the
// one troupe made, never read back from its .git file) and runs against
// a git directory troupe owns (its home, outside every workspace) that
// borrows the repository's objects and copies from its config only a
// few plain settings (file modes, symlinks, case...), with an
// environment of PATH, HOME, LANG, LC_* and TZ only, hooks, fsmonitor,
// pager and transports off, the global and system config off. Only to
// find the repository, read its config, HEAD and refs, and write a
// branch does git run in the repository itself, as plumbing that runs
// nothing (rev-parse, config --list, for-each-ref, rev-list, update-ref
// with hooks off). git add -A would run git status inside each submodule
// (its config, its filters): troupe records submodules itself
// (stage.go). And every file troupe reads, writes or removes in a tree
// an agent can write (the merge-back, kept patches, a kept worktree's
// preparation, removal and prune) goes through directories opened one
// component at a time without following a symlink (beneath.go): a
// change below a symlink is a conflict that says so, never a write
// through it. A worktree's directory is held open and reached through
// its descriptor (/proc/self/fd/N), so its path swapped for a symlink
// leads nowhere.
package workspace
