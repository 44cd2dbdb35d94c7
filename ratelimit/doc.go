// Package ratelimit shares a provider's rate limits between every agent,
// run and node of a hub, so that a fan-out never storms the provider.
//
// # Keys and limits
//
// A quota is kept per key: the endpoint's host, a fingerprint of the API
// key (KeyFor; never the key) and the model. Its limits, requests and
// tokens a minute, come from the configuration (model.rate_limit, for
// providers that send no headers) and from the provider's own headers
// (Observe: OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens},
// resets as durations such as "9ms" or "6m0s"; Anthropic's
// anthropic-ratelimit-* with RFC 3339 resets); the tightest wins. A key
// with no known limit is not paced: its first call goes alone, and the
// others wait only until its answer's headers arrive (a provider that
// states a limit states it on every answer).
//
// # The owner and the processes
//
// One Quota per hub owns every key (package cluster serves it over NATS
// and decides who owns it). It never waits: it divides a key's rate
// (Safety of the limit, as OpenAI enforces limits per second rather than
// per minute) into shares for the processes whose calls wait, answered at
// once. Runs sharing a key get equal parts while they all want more,
// weighted by run.priority; a run's part goes to the processes whose
// waiting calls are the run's shallowest, so a parent goes before its
// children. Shares are leases of LeaseTTL: a process renews at half its
// lease while it has calls waiting and gives its shares back when none
// wait, so the rest of the time a call needs no round trip.
//
// Each process has one Limiter, where every model call of the process
// waits its turn (Wait) and reports how it went (Settle): the process
// paces its calls from its shares in local buckets (requests and tokens,
// per run, and the process as a whole, so that two calls of a process do
// not go at the same instant). A call reserves its estimated input plus
// its max_tokens and gives back what its answer's usage did not use. A
// 429 (or an overload, 529 or 503) freezes the key at once in the process
// and, through the owner, in every other, until its retry-after (or
// DefaultFreeze); when the freeze ends each waiting call adds a jitter of
// its own (up to MaxJitter), so the calls it held back do not come back
// at once. Without an answer from the owner a process paces itself on
// the limits it knows, as if it were alone.
//
// # Waiting and budget slots
//
// A call waits for rate only inside its model call: it holds no permit
// while it waits for anything else, and nothing it holds is needed by a
// budget acquire. Rate comes back with time alone, so a wait for rate can
// never wait on a budget slot, and a parent waiting on its child (with
// its slot) never stops the child's calls from getting their turn.
package ratelimit
