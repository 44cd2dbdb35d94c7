package main

import (
	"bytes"
	"strings"
	"testing"
)

// resume with nothing to resume says so in a sentence for users, exit 2,
// naming no internal package: with no run named, and with one.
func TestResumeWithoutCheckpointSaysWhy(t *testing.T) {
	ws := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"resume", "--workspace", ws}, "no interrupted run to resume in " + ws},
		{[]string{"resume", "5f1c0e9a", "--workspace", ws}, "run 5f1c0e9a has no checkpoint in " + ws},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), tc.args, strings.NewReader(""), &out, &errb)
		if code != exitUsage || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "convo") {
			t.Errorf("%v: exit %d\n%s", tc.args, code, errb.String())
		}
	}
}
