// Package llmtest is a scripted OpenAI-compatible Chat Completions server
// for tests and for troupe's offline demo. It is real HTTP on a loopback
// port with real server-sent events, so callers drive it through openai-go
// (or troupe's internal/llm client) exactly as they would a provider; only
// the model is fake.
//
// A Script lists agent scripts. Each request is matched to one by its
// X-Troupe-Kind or X-Troupe-Agent header or by a substring of its task (the
// first user message), with one optional fallback. Every distinct agent
// (X-Troupe-Agent value; the script itself when the header is absent) walks
// its script's turns from the start, one entry per request, so a hundred
// explore agents matched by kind each get the whole script.
//
// A turn answers with text, tool calls (IDs generated unique per server,
// arguments split across several stream chunks), optional reasoning sent as
// reasoning_content, and usage (given, or estimated at four characters per
// token). A turn may wait (Latency) first, giving up when the request's
// context ends. A failure turn injects an HTTP error (429 with Retry-After,
// 500, 401 ...), a malformed chunk, or a connection dropped mid-stream.
// Failure entries do not complete a round: "429 then success" for a round is
// two entries, the failure and then the answer, and both requests are
// recorded with the same Round. An agent with no turns left, or a request no
// script matches, gets the text ExhaustedText rather than a hang.
//
// Every request is recorded (Requests): arrival and answer times, the
// identifying headers, model, decoded messages, tool names, stream flag, raw
// body, and the turn played, so tests assert on exactly what the model was
// sent. Scripts are Go values or JSON (ParseScript, LoadScript); see
// testdata/script.json for the JSON shape. The server is safe for concurrent
// use and cheap per request.
package llmtest
