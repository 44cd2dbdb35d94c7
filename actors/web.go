package actors

import (
	"context"
	"errors"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/web"
)

// ExtractKind is the X-Troupe-Kind of web_fetch's extraction requests
// (and the kind a model.routing.per_kind rule names to pick their model).
const ExtractKind = "web_extract"

// extractMaxTokens caps an extraction's answer.
const extractMaxTokens = 2000

// extractMaxChars caps the page an extraction reads (about 75,000
// tokens), whatever the model's window: a page longer than that is
// mostly what the prompt does not ask for, and every character is paid.
const extractMaxChars = 300_000

// kindsUnder returns kinds with their tool sets fitted to the tool
// configuration: tools it does not offer (web_search without a provider,
// web_fetch turned off) are left out, and explore agents get the web
// tools only when the configuration allows them. kinds is not changed.
func kindsUnder(kinds map[string]Kind, cfg builtin.Config) map[string]Kind {
	out := make(map[string]Kind, len(kinds))
	for name, k := range kinds {
		k.Tools = builtin.ForKindIn(cfg, name, k.Tools)
		out[name] = k
	}
	return out
}

// offeredTools is the registry without the built-in tools cfg does not
// offer, so that a call to one is an unknown tool rather than a tool
// "not allowed" for the kind.
func offeredTools(all []tools.Tool, cfg builtin.Config) []tools.Tool {
	var out []tools.Tool
	for _, t := range all {
		if builtin.Offered(cfg, t.Spec().Name) {
			out = append(out, t)
		}
	}
	return out
}

// agentExtractor is an agent's web.Extractor: web_fetch's prompt goes
// to the cheap model (or the model a per_kind rule names for
// web_extract), as a side request with its own agent and kind headers.
// Its tokens come back in the Extraction and are charged to the agent by
// its tool step (chargeExtractions).
type agentExtractor struct{ a *agent }

func (x agentExtractor) Extract(ctx context.Context, req web.ExtractRequest) (web.Extraction, error) {
	a := x.a
	model := a.rt.router.Choose(llm.Choice{Kind: ExtractKind, Role: llm.RoleCheap})
	// Leave room for the instruction and the answer; about three
	// characters a token keeps a page of code or markup inside.
	maxChars := min(max(a.rt.window(model)-extractMaxTokens-2000, 2000)*3, extractMaxChars)
	system, user, cut := req.Messages(maxChars)
	resp, err := a.rt.client.Complete(ctx, llm.Request{Model: model, MaxTokens: extractMaxTokens,
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}},
		Agent:    a.spec.id + "-extract", Run: a.rt.run, Kind: ExtractKind}, nil)
	if err != nil {
		return web.Extraction{}, err
	}
	if len(resp.Message.ToolCalls) > 0 && resp.Message.Content == "" {
		return web.Extraction{}, errors.New("the model answered with a tool call instead of text")
	}
	return web.Extraction{Text: resp.Message.Content, Model: resp.Model, TokensIn: resp.Usage.PromptTokens,
		TokensOut: resp.Usage.CompletionTokens, CostUSD: resp.Cost, InputCut: cut}, nil
}

// extractionUsage adds up what the extractions among results cost
// (results served from a cache carry none).
func extractionUsage(results []tools.Result) (llm.Usage, float64) {
	var u llm.Usage
	var cost float64
	for _, r := range results {
		ex, ok := r.Metadata[web.MetaExtraction].(web.Extraction)
		if !ok || r.Cached {
			continue
		}
		u.PromptTokens += ex.TokensIn
		u.CompletionTokens += ex.TokensOut
		cost += ex.CostUSD
	}
	return u, cost
}
