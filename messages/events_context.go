package messages

// ContextEvicted is the data of context.evicted: old tool results were
// cleared from the conversation to fit the context window.
type ContextEvicted struct {
	Count          int  `json:"count" doc:"tool results cleared"`
	CharsFreed     int  `json:"chars_freed" doc:"characters freed"`
	EstimateBefore int  `json:"estimate_before" doc:"estimated prompt tokens before"`
	EstimateAfter  int  `json:"estimate_after" doc:"estimated prompt tokens after"`
	Fallback       bool `json:"fallback,omitempty" doc:"cleared after compaction failed or fell short, down to the previous round"`
}

// ContextCompacted is the data of context.compacted: the older part of the
// conversation was replaced by a summary the model wrote.
type ContextCompacted struct {
	MessagesBefore int     `json:"messages_before" doc:"messages before"`
	MessagesAfter  int     `json:"messages_after" doc:"messages after"`
	EstimateBefore int     `json:"estimate_before" doc:"estimated prompt tokens before"`
	EstimateAfter  int     `json:"estimate_after" doc:"estimated prompt tokens after"`
	Summarized     int     `json:"summarized" doc:"messages folded into the summary"`
	SummaryChars   int     `json:"summary_chars" doc:"length of the summary"`
	Model          string  `json:"model" doc:"the model that wrote it"`
	TokensIn       int     `json:"tokens_in" doc:"prompt tokens of the summary request"`
	TokensOut      int     `json:"tokens_out" doc:"completion tokens of the summary request"`
	CostUSD        float64 `json:"cost_usd" doc:"dollars of the summary request"`
}

// ContextAdvisory is the data of context.advisory: the conversation crossed
// 60 % (advise) or 80 % (warn) of the context window and the agent was told.
type ContextAdvisory struct {
	Level   string `json:"level" doc:"advise or warn"`
	Percent int    `json:"percent" doc:"how full the window is"`
	Used    int    `json:"used" doc:"estimated prompt tokens"`
	Window  int    `json:"window" doc:"the model's context window in tokens"`
	Text    string `json:"text,omitempty" doc:"what the agent was told"`
}
