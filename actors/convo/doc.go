// Package convo holds one agent's conversation and manages its context
// window.
//
// A Conversation is the ordered list of messages an agent sends to its
// model, with bookkeeping per message: the round it was added in, its size
// in characters, and for tool results the tool's name and a short summary of
// its arguments. The system prompt(s), the task (the first user message) and
// injected context messages are pinned: they are never cleared, summarized
// or moved out of order.
//
// Size is estimated, not counted: characters divided by a chars-per-token
// ratio (3.5 until the provider reports real usage; Calibrate then moves the
// ratio towards what was observed, clamped to 1.5..8). The context window of
// the model is given in Config.
//
// Three mechanisms keep the conversation inside the window, in this order:
//
//   - Advisories. AppendToolResults appends a one-line notice to the last
//     result of a batch when the estimate first crosses 60 % and 80 % of the
//     window, so the model can adapt (targeted reads, wrapping up). Each
//     fires once per crossing and is re-armed when the estimate falls back
//     below the threshold minus a margin (after compaction, typically).
//   - Eviction. Evict replaces the content of the oldest tool results (at
//     least MinAge rounds old, tool not protected) with a one-line
//     "[Cleared: ...]" note until the estimate is below the threshold.
//   - Compaction. Compact asks the model (a side request) to summarize the
//     older part of the conversation and replaces that part with one user
//     message starting "[Summary of earlier conversation]". The pinned
//     prefix and the last RecentMessages messages stay verbatim. An
//     assistant message with tool calls is never separated from its tool
//     results (ValidatePairs checks what providers require). When the side
//     request fails the conversation is left as it was.
//
// Fit runs these in order and is what the agent loop calls before each
// model request.
//
// A Conversation is JSON-serializable and is saved inside a Checkpoint in
// the agent's Store (<state>/runs/<run>/<agent>): now and then whole, as a
// snapshot written atomically (temporary file, rename) to checkpoint.json,
// and in between as records appended to the journal beside it
// (journal.log) that hold only what changed since the last (see Writer).
// Store.Load replays the journal on the snapshot. A Conversation is not
// safe for concurrent use: it belongs to one agent actor; hand a Clone to
// another goroutine.
package convo
