package actors_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// An agent's checkpoints cost the same bytes per round at round 200 as at
// round 100: a tool step is journaled as what changed, not as the whole
// conversation. 200 rounds write about twice what 100 do (rewriting the
// conversation each round would be four times). Counted in bytes, not
// time.
func TestCheckpointBytesPerRoundLinear(t *testing.T) {
	t.Parallel()
	written := func(rounds int) int64 {
		turns := make([]llmtest.Turn, 0, rounds)
		for i := range rounds - 1 {
			turns = append(turns, calls(tc("think", fmt.Sprintf(`{"thought":"step %04d of the plan"}`, i)),
				tc("write_file", fmt.Sprintf(`{"path":"f%d.txt","content":"line %04d\n"}`, i%4, i))))
		}
		turns = append(turns, say("done"))
		srv := llmtest.New(script(kind("root", turns...)))
		defer srv.Close()
		o := options(t, srv, workspace(t, nil), "write", &actors.Recorder{})
		o.Run = fmt.Sprintf("run-bytes-%d", rounds)
		o.Settings = noPlan()
		o.Settings.MaxRounds, o.Settings.DoomRepeats = rounds+1, 1<<20
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		team, err := actors.Start(ctx, o)
		must(t, err)
		res, err := team.Wait(ctx)
		if err != nil || res.Text != "done" {
			t.Fatalf("%d rounds: %v %+v", rounds, err, res.AgentResult)
		}
		return actors.BytesWritten(team)
	}
	w100, w200 := written(100), written(200)
	ratio := float64(w200) / float64(w100)
	t.Logf("%d bytes for 100 rounds, %d for 200 (×%.2f), %d per round", w100, w200, ratio, w200/200)
	if ratio < 1.5 || ratio > 2.6 {
		t.Errorf("200 rounds wrote %.2f× what 100 did, want about 2: the bytes per round grow with the conversation", ratio)
	}
}
