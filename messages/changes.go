package messages

// Event types of an agent's changes coming back to the workspace.
const (
	EvtChangesReady    = "changes.ready"
	EvtChangesApplied  = "changes.applied"
	EvtChangesConflict = "changes.conflict"
	EvtChangesRefused  = "changes.refused"
)

// Statuses of a changeset in the requester's workspace (ChangeOutcome.Status).
const (
	ChangeStatusApplied  = "applied"
	ChangeStatusConflict = "conflict"
	ChangeStatusBranch   = "branch"
	ChangeStatusPatch    = "patch"
	ChangeStatusError    = "error"
)

// FileChange is one file of a changeset.
type FileChange struct {
	Path    string `json:"path" doc:"slash-separated, relative to the repository's top"`
	Status  string `json:"status" doc:"added, modified or deleted"`
	Added   int    `json:"added" doc:"lines added (0 for a binary file)"`
	Deleted int    `json:"deleted" doc:"lines deleted (0 for a binary file)"`
	Binary  bool   `json:"binary,omitempty" doc:"true for a binary file"`
}

// Changeset is an agent's changes relative to the snapshot it worked on:
// a binary-safe git patch and the files it touches. It travels in a
// result; Patch is bytes (base64 in JSON) because a text file need not be
// UTF-8.
type Changeset struct {
	Snapshot string `json:"snapshot" doc:"the snapshot commit the patch applies to"`
	// SnapshotTree is the snapshot commit's tree.
	SnapshotTree string       `json:"snapshot_tree,omitempty"`
	Tree         string       `json:"tree,omitempty" doc:"the tree of the agent's end state, when the requester may hold its objects"`
	Files        []FileChange `json:"files"`
	Patch        []byte       `json:"patch,omitempty"`
	PatchRef     string       `json:"patch_ref,omitempty" doc:"object store name of the patch when too large to carry"`
	// PatchSHA256 is the patch's SHA-256 (Digest), inline or by
	// reference: the requester checks the patch it fetched against it.
	PatchSHA256 string `json:"patch_sha256,omitempty" doc:"the patch's SHA-256 in hex; required with patch_ref"`
	// Pack says Patch (or the object PatchRef names) is not a patch but
	// a git pack of the objects of Tree its snapshot lacks: how a
	// changeset with big files travels (its end state is Tree, whose ID
	// is its content's hash).
	Pack bool `json:"pack,omitempty" doc:"true when patch or patch_ref holds a git pack of the objects of tree the snapshot lacks, not a patch"`
	// PatchFile, never on the wire, is a patch too large to hold in
	// memory, spooled to a private file of this process's (its SHA-256
	// PatchSHA256, proven): a node's before it is shipped, the
	// requester's once fetched from the changes bucket. Its user removes
	// the file.
	PatchFile string `json:"-"`
	// Oversize are the files the agent wrote that were over
	// agent.max_change_bytes: left out of the tree and the patch, never
	// silently.
	Oversize []OversizeFile `json:"oversize,omitempty" doc:"files over agent.max_change_bytes, left out of the patch"`
	// LFS are the git lfs objects the changed files' pointers name that
	// travel with the changeset (a node's: in the changes bucket as
	// <run>/lfs-<oid>), each checked against its oid on receipt.
	LFS []LFSObject `json:"lfs,omitempty" doc:"git lfs objects of the changed files, in the changes bucket as <run>/lfs-<oid>"`
}

// LFSObject is a git lfs object: its SHA-256 (the pointer's oid) and
// size.
type LFSObject struct {
	OID  string `json:"oid" doc:"SHA-256 of the content, 64 lowercase hex digits"`
	Size int64  `json:"size" doc:"its size in bytes"`
}

// ValidLFSOID reports whether s is a git lfs oid: a SHA-256 in
// lowercase hex.
func ValidLFSOID(s string) bool { return len(s) == 64 && isObjectID(s) }

// LFSObjectName is the object store name of a git lfs object of a run
// (in the snapshot bucket for a snapshot's, in the changes bucket for a
// changeset's).
func LFSObjectName(run, oid string) string { return run + "/lfs-" + oid }

// OversizeFile is a file an agent wrote that was too big to carry in its
// changeset (agent.max_change_bytes).
type OversizeFile struct {
	Path  string `json:"path" doc:"slash-separated, relative to the repository's top"`
	Bytes int64  `json:"bytes" doc:"its size"`
}

// Empty reports whether the changeset changes nothing.
func (c *Changeset) Empty() bool { return c == nil || len(c.Files) == 0 }

// ChangesReady is the data of changes.ready: an agent that may change
// files ended and its changes relative to its snapshot were captured.
type ChangesReady struct {
	Agent string       `json:"agent" doc:"the agent whose changes they are"`
	Files []FileChange `json:"files" doc:"the files changed, with lines added and deleted"`
}

// ChangesApplied is the data of changes.applied: an agent's changes were
// merged into the workspace (status applied), committed on a branch
// (branch) or written as a patch file (patch).
type ChangesApplied struct {
	Agent  string   `json:"agent" doc:"the agent whose changes they are"`
	Status string   `json:"status" doc:"applied, branch or patch"`
	Files  []string `json:"files" doc:"the files changed"`
	Branch string   `json:"branch,omitempty" doc:"the branch holding them (status branch)"`
	Patch  string   `json:"patch,omitempty" doc:"the patch file (status patch)"`
}

// ChangesConflict is the data of changes.conflict: an agent's changes
// overlap a change made to the workspace after its snapshot (another
// agent's or the user's); nothing was written but the patch file.
type ChangesConflict struct {
	Agent  string   `json:"agent" doc:"the agent whose changes they are"`
	Files  []string `json:"files" doc:"the files that conflict"`
	Patch  string   `json:"patch" doc:"the kept patch: applies cleanly to the snapshot with git apply"`
	Reason string   `json:"reason,omitempty" doc:"why they conflict when not (only) by overlapping edits: a rule the merge met, such as a symbolic link where the changes need a directory"`
}

// ChangesRefused is the data of changes.refused: a remote agent's
// changes were not taken in, and nothing of them was applied or kept:
// refused (a patch whose bytes are not those its result proves, changes
// to a snapshot the run did not send, an end state other than the one
// its patch makes) or lost (a patch that could not be fetched).
type ChangesRefused struct {
	Agent  string `json:"agent" doc:"the agent whose changes they are"`
	Node   string `json:"node,omitempty" doc:"the node that ran it"`
	Reason string `json:"reason" doc:"why, in a sentence"`
}

// ChangeOutcome is what became of one agent's changes (run --json's
// changes array).
type ChangeOutcome struct {
	Agent  string   `json:"agent"`
	Files  []string `json:"files"`
	Status string   `json:"status" doc:"applied, conflict, branch, patch or error"`
	Patch  string   `json:"patch,omitempty"`
	Branch string   `json:"branch,omitempty"`
	// Conflicts are the files that conflicted (status conflict).
	Conflicts []string `json:"conflicts,omitempty"`
	// Reason says why they conflicted when it was not (only) overlapping
	// edits: a rule the merge met, such as a symbolic link in the
	// workspace where the changes need a directory.
	Reason string `json:"reason,omitempty"`
	// Error says why the changes could not be brought back (status error).
	Error string `json:"error,omitempty"`
	// Worktree is where the agent's worktree was kept, whole, when its
	// changes could not be captured or brought back (status error).
	Worktree string `json:"worktree,omitempty"`
	// Oversize are the files left out of the changes for their size
	// (agent.max_change_bytes); the worktree that holds them is kept
	// (Worktree) where it was local.
	Oversize []OversizeFile `json:"oversize,omitempty"`
}
