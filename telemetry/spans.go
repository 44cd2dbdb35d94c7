package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"
)

// The GenAI operation names.
const (
	OpInvokeAgent = "invoke_agent"
	OpChat        = "chat"
	OpExecuteTool = "execute_tool"
)

// Attributes of ours, beside the GenAI conventions'.
const (
	AttrRun         = attribute.Key("troupe.run.id")
	AttrKind        = attribute.Key("troupe.agent.kind")
	AttrParent      = attribute.Key("troupe.agent.parent")
	AttrDepth       = attribute.Key("troupe.agent.depth")
	AttrNode        = attribute.Key("troupe.node")
	AttrAttempt     = attribute.Key("troupe.task.attempt")
	AttrStatus      = attribute.Key("troupe.agent.status")
	AttrReason      = attribute.Key("troupe.agent.reason")
	AttrRounds      = attribute.Key("troupe.agent.rounds")
	AttrCost        = attribute.Key("troupe.cost_usd")
	AttrAttempts    = attribute.Key("troupe.llm.attempts")
	AttrCached      = attribute.Key("troupe.tool.cached")
	AttrTruncated   = attribute.Key("troupe.tool.truncated")
	attrCacheRead   = attribute.Key("gen_ai.usage.cache_read.input_tokens")
	errorTypeTool   = "tool_error"
	errorTypeCancel = "cancelled"
)

// Tracer starts agent spans. Its zero value is off: StartAgent returns
// its context unchanged and a no-op Span, allocating nothing.
type Tracer struct {
	t trace.Tracer
}

// Enabled reports whether t records spans.
func (t Tracer) Enabled() bool { return t.t != nil }

// Span is one span. Its zero value is a no-op; its methods are safe on it.
type Span struct {
	s trace.Span
}

// Recording reports whether s records (tracing is on).
func (s Span) Recording() bool { return s.s != nil }

// Agent describes an agent for its invoke_agent span.
type Agent struct {
	Run, ID, Parent, Kind, Model, Node string
	// Provider is gen_ai.provider.name, as its chat spans say it (llm's
	// client names it from its base URL); "" is "openai", the API every
	// endpoint troupe reaches speaks.
	Provider       string
	Depth, Attempt int
}

// StartAgent starts agent's invoke_agent span under the span in ctx (a
// local parent's delegate call, or a remote one's from Extract), or as a
// trace root.
func (t Tracer) StartAgent(ctx context.Context, a Agent) (context.Context, Span) {
	if t.t == nil {
		return ctx, Span{}
	}
	provider := a.Provider
	if provider == "" {
		provider = "openai"
	}
	attrs := []attribute.KeyValue{
		semconv.GenAIOperationNameKey.String(OpInvokeAgent), semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIAgentNameKey.String(a.Kind),
		semconv.GenAIAgentIDKey.String(a.ID),
		AttrRun.String(a.Run), AttrKind.String(a.Kind), AttrDepth.Int(a.Depth),
	}
	if a.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModelKey.String(a.Model))
	}
	if a.Parent != "" {
		attrs = append(attrs, AttrParent.String(a.Parent))
	}
	if a.Node != "" {
		attrs = append(attrs, AttrNode.String(a.Node))
	}
	if a.Attempt > 0 {
		attrs = append(attrs, AttrAttempt.Int(a.Attempt))
	}
	ctx, s := t.t.Start(ctx, OpInvokeAgent+" "+a.Kind, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	return ctx, Span{s}
}

// AgentEnd is how an agent ended, for its span.
type AgentEnd struct {
	Status, Reason            string
	Failed                    bool // the agent failed: the span's status is Error
	Rounds                    int
	InputTokens, OutputTokens int
	Cost                      float64
}

// EndAgent ends an invoke_agent span with the agent's outcome and totals.
func (s Span) EndAgent(e AgentEnd) {
	if s.s == nil {
		return
	}
	s.s.SetAttributes(AttrStatus.String(e.Status), AttrReason.String(e.Reason), AttrRounds.Int(e.Rounds),
		semconv.GenAIUsageInputTokensKey.Int(e.InputTokens), semconv.GenAIUsageOutputTokensKey.Int(e.OutputTokens),
		AttrCost.Float64(e.Cost))
	if e.Failed {
		s.s.SetAttributes(semconv.ErrorTypeKey.String(e.Reason))
		s.s.SetStatus(codes.Error, "agent "+e.Status+": "+e.Reason)
	}
	s.s.End()
}

// Chat describes a model call for its chat span.
type Chat struct {
	Provider string // gen_ai.provider.name, e.g. openai
	Model    string // the model asked for
	Server   string // the API's host
	Port     int    // the API's port (0: not set)
}

// StartChat starts a chat span under the recording span in ctx (the
// calling agent's, or the tool call's that asked the model). With no
// recording span in ctx (tracing off, or a call outside any agent) it
// returns ctx and a no-op Span.
func StartChat(ctx context.Context, c Chat) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	attrs := make([]attribute.KeyValue, 0, 5)
	attrs = append(attrs, semconv.GenAIOperationNameKey.String(OpChat), semconv.GenAIProviderNameKey.String(c.Provider),
		semconv.GenAIRequestModelKey.String(c.Model))
	if c.Server != "" {
		attrs = append(attrs, semconv.ServerAddressKey.String(c.Server))
	}
	if c.Port > 0 {
		attrs = append(attrs, semconv.ServerPortKey.Int(c.Port))
	}
	ctx, s := parent.TracerProvider().Tracer(scope).Start(ctx, OpChat+" "+c.Model,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, Span{s}
}

// ChatEnd is a model call's answer, for its span.
type ChatEnd struct {
	Model                     string // the model that answered
	FinishReason              string
	InputTokens, OutputTokens int
	CachedTokens              int
	Attempts                  int // recorded when more than 1
}

// EndChat ends a chat span with the answer's model, usage and finish
// reason, or with err (status Error, error.type errType).
func (s Span) EndChat(e ChatEnd, err error, errType string) {
	if s.s == nil {
		return
	}
	if e.Attempts > 1 { // retried: a single attempt is the rule
		s.s.SetAttributes(AttrAttempts.Int(e.Attempts))
	}
	if err != nil {
		if errType == "" {
			errType = "error"
		}
		s.s.SetAttributes(semconv.ErrorTypeKey.String(errType))
		s.s.SetStatus(codes.Error, err.Error())
		s.s.End()
		return
	}
	// What a backend needs per call, and no more: each attribute costs
	// about 1-2 µs of encoding on export (the agent's span has the cost).
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, semconv.GenAIResponseModelKey.String(e.Model),
		semconv.GenAIUsageInputTokensKey.Int(e.InputTokens), semconv.GenAIUsageOutputTokensKey.Int(e.OutputTokens))
	if e.FinishReason != "" {
		attrs = append(attrs, semconv.GenAIResponseFinishReasonsKey.StringSlice([]string{e.FinishReason}))
	}
	if e.CachedTokens > 0 {
		attrs = append(attrs, attrCacheRead.Int(e.CachedTokens))
	}
	s.s.SetAttributes(attrs...)
	s.s.End()
}

// StartTool starts an execute_tool span for one tool call under the
// recording span in ctx (its agent's); with none it returns ctx and a
// no-op Span.
func StartTool(ctx context.Context, tool, callID string) (context.Context, Span) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, Span{}
	}
	ctx, s := parent.TracerProvider().Tracer(scope).Start(ctx, OpExecuteTool+" "+tool,
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			semconv.GenAIOperationNameKey.String(OpExecuteTool),
			semconv.GenAIToolNameKey.String(tool), semconv.GenAIToolCallIDKey.String(callID),
			semconv.GenAIToolTypeKey.String("function")))
	return ctx, Span{s}
}

// ToolEnd is a tool call's outcome, for its span.
type ToolEnd struct {
	IsError, Cancelled, Cached, Truncated bool
}

// EndTool ends an execute_tool span; an error result sets status Error
// (the result's text, which may quote files, stays out of the span).
func (s Span) EndTool(e ToolEnd) {
	if s.s == nil {
		return
	}
	if e.Cached {
		s.s.SetAttributes(AttrCached.Bool(true))
	}
	if e.Truncated {
		s.s.SetAttributes(AttrTruncated.Bool(true))
	}
	switch {
	case e.Cancelled:
		s.s.SetAttributes(semconv.ErrorTypeKey.String(errorTypeCancel))
		s.s.SetStatus(codes.Error, "tool call cancelled")
	case e.IsError:
		s.s.SetAttributes(semconv.ErrorTypeKey.String(errorTypeTool))
		s.s.SetStatus(codes.Error, "the tool returned an error result")
	}
	s.s.End()
}
