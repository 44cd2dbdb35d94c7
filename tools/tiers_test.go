package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

type noParams struct{}

// fakeTool is a tool of the given tier whose definition is about tokens
// long.
func fakeTool(name string, tier Tier, tokens int) Tool {
	desc := name + " does something. " + strings.Repeat("x", max(0, int(float64(tokens)*CharsPerToken)-len(name)-40))
	return New(Spec{Name: name, Description: desc, ReadOnly: true, Tier: tier},
		func(context.Context, *Session, noParams) (Result, error) { return Text(name + " ran"), nil })
}

func names(specs []messages.ToolSpec) string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

func TestOfferSendsEverythingWithinBudget(t *testing.T) {
	reg := NewRegistry(fakeTool("core", TierAlways, 300), fakeTool("rel", TierOnRelevance, 200), fakeTool("dem", TierOnDemand, 200))
	o := Tiers{Budget: 500}.Offer(reg, nil)
	if names(o.Specs) != "core,dem,rel" || len(o.Deferred) != 0 || o.Callable != reg {
		t.Errorf("specs %s, deferred %v", names(o.Specs), o.Deferred)
	}
	if o.Tokens() != DefinitionTokens(reg.ToolSpecs()...) || o.Chars() == 0 {
		t.Errorf("tokens %d", o.Tokens())
	}
}

func TestOfferDefersOverBudget(t *testing.T) {
	reg := NewRegistry(fakeTool("core", TierAlways, 300), fakeTool("rel_a", TierOnRelevance, 200),
		fakeTool("rel_b", TierOnRelevance, 200), fakeTool("dem", TierOnDemand, 50), fakeTool("mcp__s__x", TierOnDemand, 400))
	o := Tiers{Budget: 300}.Offer(reg, nil)
	if got := names(o.Specs); got != "core,rel_a,search_tools" {
		t.Fatalf("specs %s", got)
	}
	if strings.Join(o.Deferred, ",") != "dem,mcp__s__x,rel_b" || !o.IsDeferred("rel_b") || o.IsDeferred("core") {
		t.Fatalf("deferred %v", o.Deferred)
	}
	var search messages.ToolSpec
	for _, s := range o.Specs {
		if s.Name == NameSearchTools {
			search = s
		}
	}
	if !strings.HasSuffix(search.Description, "Tools you can load (3):\ndem\nmcp__s__x\nrel_b\n") {
		t.Errorf("search_tools description: %s", search.Description)
	}
	for _, n := range []string{"core", "dem", "mcp__s__x", "rel_a", "rel_b", NameSearchTools} {
		if _, ok := o.Callable.Get(n); !ok {
			t.Errorf("%s is not callable", n)
		}
	}
	if full := DefinitionTokens(reg.ToolSpecs()...); o.Tokens() >= full {
		t.Errorf("deferring saved nothing: %d of %d tokens", o.Tokens(), full)
	}

	loaded := Tiers{Budget: 300}.Offer(reg, map[string]bool{"mcp__s__x": true})
	if got := names(loaded.Specs); got != "core,mcp__s__x,rel_a,search_tools" || strings.Join(loaded.Deferred, ",") != "dem,rel_b" {
		t.Errorf("after loading: specs %s, deferred %v", got, loaded.Deferred)
	}
	if never := (Tiers{Budget: -1}).Offer(reg, nil); len(never.Deferred) != 0 || len(never.Specs) != 5 {
		t.Errorf("a negative budget deferred %v", never.Deferred)
	}
}

func TestTierOverrides(t *testing.T) {
	tiers := Tiers{Overrides: map[string]Tier{"mcp__gh__*": TierAlways, "mcp__gh__delete_repo": TierOnDemand, "ask_user": TierAlways}}
	for name, want := range map[string]Tier{"mcp__gh__create_issue": TierAlways, "mcp__gh__delete_repo": TierOnDemand,
		"ask_user": TierAlways, "mcp__other__x": TierOnDemand} {
		if got := tiers.TierOf(Spec{Name: name, Tier: TierOnDemand}); got != want {
			t.Errorf("%s: %s, want %s", name, got, want)
		}
	}
	if got := (Tiers{}).TierOf(Spec{Name: "custom"}); got != TierAlways {
		t.Errorf("a tool without a tier is %s", got)
	}
}

func TestSearchTools(t *testing.T) {
	catalog := NewRegistry(fakeTool("mcp__gh__create_issue", TierOnDemand, 50), fakeTool("mcp__gh__list_issues", TierOnDemand, 50),
		fakeTool("mcp__shots__screenshot", TierOnDemand, 50), fakeTool("ask_user", TierOnDemand, 50))
	st := SearchTools(catalog)
	call := func(args string) Result {
		r, err := st.Run(t.Context(), nil, json.RawMessage(args))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	loaded := func(r Result) string {
		l, _ := r.Metadata[MetaLoadedTools].([]string)
		return strings.Join(l, ",")
	}
	tests := []struct{ args, want string }{
		{`{"query":"screenshot"}`, "mcp__shots__screenshot"},
		{`{"query":"issue"}`, "mcp__gh__create_issue,mcp__gh__list_issues"},
		{`{"query":"create_issue"}`, "mcp__gh__create_issue"},
		{`{"query":"mcp__gh__list_issues, ask_user"}`, "ask_user,mcp__gh__list_issues"},
		{`{"query":"gh","limit":1}`, "mcp__gh__create_issue"},
	}
	for _, tt := range tests {
		r := call(tt.args)
		if r.IsError || loaded(r) != tt.want {
			t.Errorf("%s: loaded %q, want %q (%s)", tt.args, loaded(r), tt.want, r.Text)
		}
	}
	r := call(`{"query":"gh","limit":1}`)
	if !strings.Contains(r.Text, "Loaded 1 tool; its definition is in your tool list from your next turn") ||
		!strings.Contains(r.Text, "1 more tool matches") {
		t.Errorf("text: %s", r.Text)
	}
	if r := call(`{"query":"  "}`); !r.IsError || !strings.Contains(r.Text, "query is empty") {
		t.Errorf("empty query: %+v", r)
	}
	if r := call(`{"query":"kubernetes"}`); r.IsError || loaded(r) != "" || !strings.Contains(r.Text, "No tool matches") {
		t.Errorf("no match: %+v", r)
	}
	if r := call(`{"query":"x","limit":50}`); !r.IsError || !strings.Contains(r.Text, "at most 20") {
		t.Errorf("limit over the max: %+v", r)
	}
	if r, _ := SearchTools(NewRegistry()).Run(t.Context(), nil, json.RawMessage(`{"query":"a"}`)); !strings.Contains(r.Text, "No tools are waiting") {
		t.Errorf("empty catalog: %+v", r)
	}
}
