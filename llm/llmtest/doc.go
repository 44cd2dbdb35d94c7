// Package llmtest is a scripted OpenAI-compatible Chat Completions server
// for tests and for troupe's offline demo. It is real HTTP on a loopback
// port with real server-sent events, so callers drive it through openai-go
// (or troupe's llm client) exactly as they would a provider; only
// the model is fake.
//
// # Matching and rounds
//
// A Script lists agent scripts. Each request is matched to one by its
// X-Troupe-Kind or X-Troupe-Agent header or by a substring of its task (the
// first user message); every set field of a Matcher must match, scripts are
// tried in order, and one optional fallback takes the rest. Every distinct
// agent (X-Troupe-Agent value; the script itself when the header is absent)
// walks its script's turns from the start, one entry per request, so a
// hundred explore agents matched by kind each get the whole script. An agent
// with no turns left, or a request no script matches, gets the text
// ExhaustedText rather than a hang, unless the script has Repeat set.
//
// # Turns
//
// A turn answers with text, tool calls (IDs generated unique per server,
// arguments split across several stream chunks; RawArgs plays a model that
// writes broken JSON), optional reasoning sent as reasoning_content, and
// usage (given, or estimated at four characters per token). A turn may wait
// (Latency) first, giving up when the request's context ends. Dynamic turns
// compute the answer from the request. A failure turn injects an HTTP error
// (429 with Retry-After, 500, 401 ...), a malformed chunk, a connection
// dropped mid-stream, an error event mid-stream, or a stall (the stream goes
// quiet until the client gives up).
//
// Failure entries do not complete a round: "429 then success" for a round is
// two entries, the failure and then the answer, and both requests are
// recorded with the same Round.
//
// # Recording
//
// Every request is recorded (Requests) just before the end of its answer is
// written: arrival and answer times, the identifying headers, model, decoded
// messages, tool names, stream flag, raw body, and the turn played, so tests
// assert on exactly what the model was sent. The server is safe for
// concurrent use and cheap per request.
//
// # JSON scripts
//
// Scripts are Go values or JSON (ParseScript, LoadScript). Durations are Go
// duration strings or numbers of milliseconds; unknown keys are errors:
//
//	{"agents": [
//	  {"match": {"kind": "explore"},
//	   "turns": [
//	     {"tool_calls": [{"name": "grep", "args": {"pattern": "func main"}}],
//	      "reasoning": "look first"},
//	     {"fail": {"kind": "status", "status": 429, "retry_after": "200ms"}},
//	     {"text": "main is in cmd/orchestrator", "latency": "50ms",
//	      "usage": {"prompt_tokens": 1200, "completion_tokens": 40, "cached_tokens": 1000}}]},
//	  {"match": {"task_contains": "README"}, "repeat": true,
//	   "turns": [{"fail": {"kind": "drop", "after_chunks": 2}}, {"text": "hello"}]},
//	  {"match": {"fallback": true}, "turns": [{"text": "done"}]}]}
//
// Failure kinds are "status" (status, message, code, type, retry_after),
// "malformed", "drop", "stall" and "error_event" (after_chunks; error_event
// also takes message and code).
package llmtest
