package actors_test

import (
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// An agent whose model has no price ends saying so (agent.ended unpriced),
// so a watcher never shows its $0 as a price; a priced one does not.
func TestAgentEndedSaysUnpriced(t *testing.T) {
	for _, priced := range []bool{false, true} {
		srv := llmtest.New(script(kind("root", say("done"))))
		t.Cleanup(srv.Close)
		rec := &actors.Recorder{}
		o := options(t, srv, t.TempDir(), "say done", rec)
		cfg := llm.Config{BaseURL: srv.URL(), Model: "big-model", Stream: true}
		if priced {
			cfg.Pricing = llm.Pricing{"big-model": {Input: 1, Output: 2}}
		}
		c, err := llm.NewClient(cfg, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		o.Client = c
		o.Settings.PlanFirst = map[string]bool{"root": false}
		if res := run(t, o); res.Text != "done" {
			t.Fatalf("%+v", res.AgentResult)
		}
		ended := rec.OfType(messages.EvtAgentFinished)
		if len(ended) != 1 {
			t.Fatalf("%d agent.finished events", len(ended))
		}
		d, err := messages.DecodeAs[messages.AgentEnded](ended[0])
		if err != nil {
			t.Fatal(err)
		}
		if d.Unpriced == priced || (priced && d.CostUSD == 0) {
			t.Errorf("priced %v: agent.ended unpriced %v, cost %v", priced, d.Unpriced, d.CostUSD)
		}
	}
}
