package builtin

import (
	"context"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/web"
)

// everythingTools stand for the 14 tools of the reference MCP server
// server-everything (2026.8.31) given to explore agents: their names and
// the estimated tokens of their definitions as troupe sends them (1,475
// in all), each on-demand as an MCP tool is.
var everythingTools = map[string]int{
	"echo": 61, "get-annotated-message": 143, "get-env": 58, "get-resource-links": 97,
	"get-resource-reference": 109, "get-structured-content": 103, "get-sum": 76, "get-tiny-image": 46,
	"gzip-file-as-resource": 275, "toggle-simulated-logging": 60, "toggle-subscriber-updates": 62,
	"trigger-long-running-operation": 120, "get-roots-list": 78, "simulate-research-query": 192,
}

// The explore agent's offer, pinned: its own tools are always sent in
// full; the web tools (tools.web.explore) fit in the default definition
// budget and are sent too; a server's worth of optional tools over the
// budget is only named, in search_tools, which then costs less than the
// definitions it stands for. `go test -run TestExploreOffer -v ./tools/builtin`
// prints the per-round figures the README quotes.
func TestExploreOffer(t *testing.T) {
	t.Parallel()
	var mcpTools []tools.Tool
	for name, tokens := range everythingTools {
		mcpTools = append(mcpTools, sizedTool("mcp__everything__"+name, tools.TierOnDemand, tokens))
	}
	explore := ForKind(KindExplore)
	const own = "find_files,grep,list_dir,read_file,think"
	cases := []struct {
		name     string
		web      bool
		mcp      bool
		sent     string
		deferred int
	}{
		{"own tools", false, false, own, 0},
		{"with the web tools", true, false, own + ",web_fetch,web_search", 0},
		{"with an MCP server", false, true, "find_files,grep,list_dir,read_file,search_tools,think", len(everythingTools)},
		{"with both", true, true, "find_files,grep,list_dir,read_file,search_tools,think,web_fetch,web_search", len(everythingTools)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			allow := explore
			if c.web {
				allow = append(allow[:len(allow):len(allow)], web.NameWebFetch, web.NameWebSearch)
			}
			all := tools.NewRegistry(All()...).Filter(allow)
			ts := make([]tools.Tool, 0, len(allow)+len(mcpTools))
			for _, n := range all.Names() {
				tool, _ := all.Get(n)
				ts = append(ts, tool)
			}
			if c.mcp {
				ts = append(ts, mcpTools...)
			}
			reg := tools.NewRegistry(ts...)
			o := tools.Tiers{}.Offer(reg, nil)
			if got := names(o.Specs); got != c.sent {
				t.Errorf("sent in full: %s, want %s", got, c.sent)
			}
			if len(o.Deferred) != c.deferred {
				t.Errorf("named only: %v", o.Deferred)
			}
			for _, d := range o.Deferred {
				if !strings.HasPrefix(d, "mcp__everything__") {
					t.Errorf("%s is deferred", d)
				}
			}
			before := tools.DefinitionTokens(reg.ToolSpecs()...)
			if c.mcp && o.Tokens() >= before || !c.mcp && o.Tokens() != before {
				t.Errorf("%d tokens a round, %d without tiers", o.Tokens(), before)
			}
			t.Logf("%s: %d estimated tokens of tool definitions a round; %d without tiers", c.name, o.Tokens(), before)
		})
	}
}

// sizedTool is a tool of the given tier whose definition is estimated at
// exactly tokens.
func sizedTool(name string, tier tools.Tier, tokens int) tools.Tool {
	run := func(context.Context, *tools.Session, noParams) (tools.Result, error) {
		return tools.Text(name + " ran"), nil
	}
	bare := tools.New(tools.Spec{Name: name, ReadOnly: true, Tier: tier}, run).Spec()
	fixed := tools.DefinitionChars(messages.ToolSpec{Name: bare.Name, Parameters: bare.SchemaJSON()})
	desc := strings.Repeat("x", int(float64(tokens)*tools.CharsPerToken)-fixed)
	return tools.New(tools.Spec{Name: name, Description: desc, ReadOnly: true, Tier: tier}, run)
}
