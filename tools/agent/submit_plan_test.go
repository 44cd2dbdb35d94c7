package agent

import (
	"encoding/json"
	"testing"
)

func TestSubmitPlan(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	ok := `{"summary":"Add a timeout.","steps":[{"title":"Add Timeout to Config","files":["app/config/config.go"],"agent":"worker"},{"title":"Test it","detail":"table test"}]}`
	r, err := SubmitPlan().Run(t.Context(), s, json.RawMessage(ok))
	if err != nil || r.IsError {
		t.Fatalf("%v %q", err, r.Text)
	}
	golden(t, "submit_plan/accepted", r.Text)
	p, isPlan := r.Metadata["plan"].(Plan)
	if !isPlan || len(p.Steps) != 2 || p.Steps[0].Files[0] != "app/config/config.go" {
		t.Errorf("metadata plan %#v", r.Metadata["plan"])
	}
	for args, want := range map[string]string{
		`{"summary":"x","steps":[]}`:                           "invalid plan: it has no steps",
		`{"summary":" ","steps":[{"title":"a"}]}`:              "invalid plan: summary is empty",
		`{"summary":"x","steps":[{"title":""}]}`:               "step 1 has an empty title",
		`{"summary":"x","steps":[{"title":"a","files":[""]}]}`: "step 1 lists an empty file path",
		`{"summary":"x"}`:                                      `field "steps" is required`,
		`{"summary":"x","steps":[{"title":"a","name":"b"}]}`:   `unknown field "steps[0].name"`,
	} {
		r, _ := SubmitPlan().Run(t.Context(), s, json.RawMessage(args))
		if !r.IsError || !contains(r.Text, want) {
			t.Errorf("%s: %q, want %q", args, r.Text, want)
		}
	}
}
