package llm

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"

	"github.com/troupe-ai/troupe/messages"
)

// EmptyToolResult is sent as the content of a tool message whose content is
// empty: several providers reject a tool message without content.
const EmptyToolResult = "(no output)"

// buildParams converts req to Chat Completions parameters for model.
func (c *OpenAIClient) buildParams(model string, req Request) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: model}
	p.Messages = make([]openai.ChatCompletionMessageParamUnion, 0, len(req.Messages))
	for i, m := range req.Messages {
		pm, err := toParam(m)
		if err != nil {
			return p, fmt.Errorf("%w: messages[%d]: %v", ErrBadRequest, i, err)
		}
		p.Messages = append(p.Messages, pm)
	}
	if len(req.Tools) > 0 {
		p.Tools = make([]openai.ChatCompletionToolUnionParam, 0, len(req.Tools))
		for i, t := range req.Tools {
			tp, err := toolParam(t)
			if err != nil {
				return p, fmt.Errorf("%w: tools[%d] (%s): %v", ErrBadRequest, i, t.Name, err)
			}
			p.Tools = append(p.Tools, tp)
		}
		p.ParallelToolCalls = openai.Bool(true)
	}
	if req.MaxTokens > 0 {
		if c.openAIHost {
			// OpenAI's reasoning models refuse max_tokens.
			p.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
		} else {
			// Most OpenAI-compatible servers know only max_tokens.
			p.MaxTokens = openai.Int(int64(req.MaxTokens))
		}
	}
	if c.cfg.Stream {
		p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	}
	return p, nil
}

// isOpenAIHost reports whether base is OpenAI's own API.
func isOpenAIHost(base string) bool {
	u, err := url.Parse(base)
	return err == nil && strings.EqualFold(u.Hostname(), "api.openai.com")
}

// toParam converts one message. Reasoning is not sent back: most
// providers ignore it and some reject it.
func toParam(m Message) (openai.ChatCompletionMessageParamUnion, error) {
	switch m.Role {
	case RoleSystem:
		return openai.SystemMessage(m.Content), nil
	case RoleUser:
		return openai.UserMessage(m.Content), nil
	case RoleTool:
		if m.ToolCallID == "" {
			return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool message without tool_call_id")
		}
		content := m.Content
		if content == "" {
			content = EmptyToolResult
		}
		return openai.ToolMessage(content, m.ToolCallID), nil
	case RoleAssistant:
		var a openai.ChatCompletionAssistantMessageParam
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for j, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("tool_calls[%d]: id and name are required", j)
			}
			args := string(tc.Args)
			if args == "" {
				args = "{}"
			} else if s, ok := invalidArgs(tc.Args); ok {
				// Arguments the model sent as broken JSON were kept as a
				// JSON string (see toolCalls); send back what it wrote.
				args = s
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID:       tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: args},
				}})
		}
		return openai.ChatCompletionMessageParamUnion{OfAssistant: &a}, nil
	default:
		return openai.ChatCompletionMessageParamUnion{}, fmt.Errorf("unknown role %q (want system, user, assistant or tool)", m.Role)
	}
}

// toolParam converts a tool spec to a function tool.
func toolParam(t messages.ToolSpec) (openai.ChatCompletionToolUnionParam, error) {
	if t.Name == "" {
		return openai.ChatCompletionToolUnionParam{}, fmt.Errorf("name is empty")
	}
	params := openai.FunctionParameters{"type": "object", "properties": map[string]any{}}
	if len(t.Parameters) > 0 {
		params = openai.FunctionParameters{}
		if err := json.Unmarshal(t.Parameters, &params); err != nil {
			return openai.ChatCompletionToolUnionParam{}, fmt.Errorf("parameters: not a JSON Schema object: %v", err)
		}
	}
	def := openai.FunctionDefinitionParam{Name: t.Name, Parameters: params}
	if t.Description != "" {
		def.Description = openai.String(t.Description)
	}
	return openai.ChatCompletionFunctionTool(def), nil
}

// toolCalls converts the model's tool calls. Arguments that are not valid
// JSON (weak models do that) are kept verbatim inside a JSON string, so the
// message still marshals and the tool layer reports "arguments must be an
// object" with the text the model wrote; empty arguments become {}. Sent
// back in history, the model sees exactly the (trimmed) text it wrote.
func toolCalls(calls []assembledCall) []messages.ToolCall {
	if len(calls) == 0 {
		return nil
	}
	out := make([]messages.ToolCall, 0, len(calls))
	for _, tc := range calls {
		args := strings.TrimSpace(tc.args)
		var raw json.RawMessage
		switch {
		case args == "":
			raw = json.RawMessage("{}")
		case args[0] != '"' && json.Valid([]byte(args)):
			raw = json.RawMessage(args)
		default:
			// Broken JSON, or a bare JSON string: kept as a JSON string
			// holding the text, which toParam unwraps when sending back.
			raw, _ = json.Marshal(args)
		}
		out = append(out, messages.ToolCall{ID: tc.id, Name: tc.name, Args: raw})
	}
	return out
}

// invalidArgs reports arguments stored as a JSON string by toolCalls and
// returns the text inside. (Valid arguments are never a bare JSON string:
// toolCalls wraps those too, so the unwrapping is exact.)
func invalidArgs(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// reasoningOf reads the provider's reasoning text from a raw message or
// delta: reasoning_content (DeepSeek, vLLM) or reasoning (OpenRouter,
// Ollama). The SDK has no field for either.
func reasoningOf(raw string) string {
	if raw == "" {
		return ""
	}
	for _, key := range [...]string{"reasoning_content", "reasoning"} {
		if v := gjson.Get(raw, key); v.Type == gjson.String {
			return v.Str
		}
	}
	return ""
}

// usageOf converts the provider's usage, reading cached prompt tokens from
// prompt_tokens_details.cached_tokens or DeepSeek's prompt_cache_hit_tokens.
func usageOf(u openai.CompletionUsage) Usage {
	out := Usage{PromptTokens: int(u.PromptTokens), CompletionTokens: int(u.CompletionTokens),
		CachedTokens: int(u.PromptTokensDetails.CachedTokens)}
	if out.CachedTokens == 0 {
		if v := gjson.Get(u.RawJSON(), "prompt_cache_hit_tokens"); v.Exists() {
			out.CachedTokens = int(v.Int())
		}
	}
	return out
}
