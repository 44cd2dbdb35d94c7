package bus

import (
	"errors"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// FindRun resolves a unique prefix of a run ID from the run.started
// subjects alone; an unknown or shared prefix is an error at once.
func TestFindRunByPrefix(t *testing.T) {
	_, c := embedded(t)
	for _, run := range []string{"5f1c0e9a-1111", "5f1c0e9a-2222", "77aa0000-3333", "abc"} {
		if _, err := c.JetStream().Publish(t.Context(), EventSubject(DefaultPrefix, run, "run", messages.EvtRunStarted), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	// another event of a run that never started is not a run
	if _, err := c.JetStream().Publish(t.Context(), EventSubject(DefaultPrefix, "99ff0000-4444", "root", messages.EvtToolFinished), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	for prefix, want := range map[string]string{"77aa0000": "77aa0000-3333", "5f1c0e9a-2": "5f1c0e9a-2222", "abc": "abc", "77aa0000-3333": "77aa0000-3333", "ab": "abc"} {
		if got, err := c.FindRun(t.Context(), prefix); err != nil || got != want {
			t.Errorf("FindRun(%q) = %q, %v; want %q", prefix, got, err, want)
		}
	}
	if _, err := c.FindRun(t.Context(), "5f1c0e9a"); !errors.Is(err, ErrAmbiguousRun) || !strings.Contains(err.Error(), "5f1c0e9a-1111, 5f1c0e9a-2222") {
		t.Errorf("shared prefix: %v", err)
	}
	for _, prefix := range []string{"99ff0000", "0000"} {
		if _, err := c.FindRun(t.Context(), prefix); !errors.Is(err, ErrUnknownRun) {
			t.Errorf("FindRun(%q): %v", prefix, err)
		}
	}
	if _, err := c.FindRun(t.Context(), "a.b"); err == nil {
		t.Error("a run ID with a dot was accepted")
	}
}
