// Package tools is troupe's tool framework and its file and search tools.
//
// A tool is a typed params struct plus a run function (New): the JSON
// Schema the model sees is generated from the struct, and arguments are
// validated against it before the tool runs, so a bad call comes back as an
// error result that names the field, what was expected and what came. A
// tool failure the model should read (a missing file, a non-zero exit, a
// refused path) is a Result with IsError set; a Go error means the harness
// broke.
//
// The Executor runs the calls of one model turn: concurrently, except
// Sequential tools (shell: one at a time, in call order) and calls that
// touch a path an earlier mutating call of the turn touches (serialized in
// call order). Around every call it applies the per-call timeout, panic
// recovery, the result cache (read-only cacheable tools; a mutation
// invalidates the entries of its paths and of the directories above them,
// shell invalidates all, entries age out after N rounds of the agent that
// stored them) and truncation (head, head and tail, or head lines, with a
// notice saying what was cut and where the full output was saved).
//
// Every path argument is resolved against the Workspace root with symlinks
// followed; a path that lands outside is refused. Resolving only names the
// file: every access then goes through the root held open as an os.Root,
// which opens one component at a time beneath the root's descriptor and
// refuses a symlink out, so a component swapped between the check and the
// open cannot lead a tool outside; walks open each folder beneath its
// parent's descriptor and never follow a symlink. Edits are only allowed
// on files read in this session and unchanged on disk since (ReadTracker);
// writes are atomic. Outputs are small by default: paths before contents,
// confirmations rather than echoes.
//
// The file tools (Spec.Diff) report their changes at one gate after their
// checks and before they write: the executor puts the unified diff of
// those changes (cut at 8 KiB) in the result's metadata (diff,
// lines_added, lines_removed, diff_cut), and PreviewCall runs a call up to
// that gate, writing nothing, to show the diff before an approval. An
// approved call (Executor.Approved) writes only the change that was
// previewed. A write to a file the session has not read as it is carries
// blind: true in its metadata.
//
// Tiers decide which definitions an agent is sent each round: TierAlways
// tools always; the optional ones while their estimated tokens fit the
// definition budget, beyond it TierOnRelevance tools as long as they fit
// and every other one listed by name in the description of search_tools,
// which loads the definitions matching a query for the next round. A call
// to a listed tool runs (the kind allows it) and loads it too. Tools
// listed at run time (MCP servers, package tools/mcp) come from a
// ToolSource.
//
// The other tool families are packages of their own on top of this one
// (tools/shell, tools/web, tools/agent, tools/mcp), and tools/builtin is
// the one place that lists them all and maps them to agent kinds. What a
// tool package keeps per agent lives in the Session under a key of its
// own (State, Session.Attach): the framework knows none of them. A
// session's own values that are io.Closers are closed with it
// (Session.Close); values that go stale when a call changes something
// hear of it (MutationHook). This package knows nothing of actors or
// NATS.
package tools
