package setup

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// events.deltas in a config file reaches the run: with it, a run built
// from the config (TeamOptions, the scripted model behind model.base_url)
// emits the streamed answer as llm.delta events; without it (the
// default), none.
func TestEventsDeltasConfigReachesTheRun(t *testing.T) {
	t.Parallel()
	answer := strings.Repeat("The cache is invalidated in store.go. ", 20)
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{{Text: answer}}}}})
			defer srv.Close()
			yaml := "model: {base_url: " + srv.URL() + ", api_key: test-key, stream: true}\nagent: {plan_first: {root: false}}\n"
			if on {
				yaml += "events: {deltas: true}\n"
			}
			file := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(config.Sources{File: file})
			if err != nil {
				t.Fatal(err)
			}
			o, err := TeamOptions(cfg, t.TempDir(), zerolog.Nop(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if o.StreamDeltas != on {
				t.Fatalf("Options.StreamDeltas = %v with events.deltas %v", o.StreamDeltas, on)
			}
			rec := &actors.Recorder{}
			o.Events, o.Task = rec, "why?"
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			res, err := actors.Run(ctx, o)
			if err != nil || res.Text != answer {
				t.Fatalf("run: %v, answer %q", err, res.Text)
			}
			var text strings.Builder
			for _, ev := range rec.OfType(messages.EvtLLMDelta) {
				d, err := messages.DecodeAs[messages.LLMDelta](ev)
				if err != nil {
					t.Fatal(err)
				}
				text.WriteString(d.Text)
			}
			if on && text.String() != answer {
				t.Errorf("deltas carry %d of the answer's %d bytes", text.Len(), len(answer))
			}
			if !on && text.Len() != 0 {
				t.Errorf("llm.delta events without events.deltas")
			}
		})
	}
}
