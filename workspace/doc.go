// Package workspace snapshots a workspace, materialises worktrees from a
// snapshot, captures an agent's changes as a changeset and merges them
// back into the workspace.
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
//
// A worktree is a directory materialised from a snapshot (git worktree
// add --detach), under the data directory. Registering a worktree is
// serialised per repository (a mutex in the process and a lock file
// across processes), so many agents can start at once without racing on
// git's lock files; the checkout itself runs in parallel, written in Go
// (the files by a few goroutines, then git's index with their stat data;
// materialise.go) unless attributes, configuration or submodules could
// make git's own checkout differ, which then does it. Worktrees left
// by a killed process are removed by Prune at the next start. A Repo
// keeps removed worktrees for reuse (Options.KeepIdle, Prewarm) and
// prepares them in the background for the latest snapshot, writing only
// the paths that differ (see worktree_reuse.go), so an agent's worktree
// usually costs no checkout at all.
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
// Repo and diff trees in Go, so a clean merge starts no git process.
//
// A changeset is an agent's changes relative to its snapshot: a binary-safe
// patch (git diff --binary) and the changed files with their added and
// deleted line counts. Apply merges a changeset into the workspace three
// ways, file by file, against the snapshot: the base is the snapshot's
// file, ours the file as it is now in the workspace, theirs the agent's.
// Changes to different files or to different regions of one file merge;
// an overlap with a change applied before or with an edit the user made
// meanwhile is a conflict, and then nothing is written: the changeset is
// kept as a patch file that applies cleanly to the snapshot. Applies are
// serialised per repository, in the order they are asked for.
//
// git runs with the user's global and system configuration and hooks
// switched off (GIT_CONFIG_GLOBAL=/dev/null, GIT_CONFIG_NOSYSTEM=1,
// core.hooksPath=/dev/null), so nothing of the user's runs on our
// worktrees.
package workspace
