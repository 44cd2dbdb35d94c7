// Package llm is troupe's access to models: one Client interface
// (types.go) and its implementation over openai-go's Chat Completions, which
// reaches OpenAI, OpenRouter, vLLM, Ollama, llama.cpp server and LM Studio by
// base URL.
//
// OpenAIClient streams by default (with stream_options.include_usage) and
// sends a Request's tools as function tools with parallel tool calls. Tool
// calls are assembled by index after the stream ends; reasoning text sent as
// reasoning_content (DeepSeek, vLLM) or reasoning (OpenRouter, Ollama) is
// kept in Message.Reasoning. The caller is named to the provider by the
// X-Troupe-Agent, X-Troupe-Run and X-Troupe-Kind headers.
//
// Retries are ours, not the SDK's: a 408, 409, 429 or 5xx answer, a network
// error, an attempt timeout (Config.RequestTimeout), a stream that ends
// before [DONE] or goes quiet (Config.StreamIdleTimeout), an error event in
// the stream and a malformed chunk are retried up to Config.MaxAttempts, with exponential backoff and
// full jitter, or after the provider's Retry-After / retry-after-ms when it
// sends one (honoured up to Config.MaxRetryAfter even above MaxBackoff).
// Other statuses (400, 401, 403, 404, 422) return an *APIError at once with
// the provider's status, message and code (read from OpenAI's error shape or
// from the shapes Ollama, vLLM and gateways use). A server that answers a
// streaming request without an event stream gets ErrNotEventStream, not a
// retry. When the caller's context ends,
// the call returns promptly with an error wrapping context.Canceled or
// context.DeadlineExceeded. Response.Attempts counts the attempts made.
//
// With Config.Limiter set (package ratelimit), every attempt, retries
// included, first waits its turn under the hub's shared provider rate
// limits (Request.OnRate hears the waits), and a 429, 529 or 503 freezes
// the key for every agent of the hub instead of backing off alone.
// Config.MaxAttempts bounds the attempts across 429s and transient
// errors.
//
// An answer is bounded: Config.MaxTextBytes of text and reasoning,
// Config.MaxToolCallBytes per tool call's arguments and
// Request.MaxToolCalls calls, read in linear time. Past a cap the call
// fails with a *LimitError (ErrOverLimit) at once, without reading the
// rest of the answer (one server-sent event, and a non-streamed body, are
// capped too), and is not retried.
//
// Streamed fragments reach the caller's onDelta as they arrive. A retried
// attempt that had already streamed fragments is followed by one empty
// Delta{}, meaning "discard this call's fragments so far"; the Response holds
// only the successful attempt's answer.
//
// The API key is sent only as a bearer token: it is never logged, and any
// echo of it (or of another of Config.Secrets, 8 characters or longer) in a
// provider's error text is replaced by "[redacted]". The
// client reads none of openai-go's OPENAI_* environment variables; the
// config layer passes values in. (Go's HTTP transport still honours the
// standard HTTPS_PROXY / NO_PROXY variables, as every Go program does.)
//
// Router picks a model per agent kind and round (single, per-kind,
// cheap-orchestrator, rounds; an explicit per-call model wins). Pricing turns
// Usage into USD (cached prompt tokens at their own rate), and
// Config.ContextWindow gives a model's window.
package llm
