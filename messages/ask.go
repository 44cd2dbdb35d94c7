package messages

import (
	"encoding/json"
	"fmt"
	"strings"
)

// AskRequest is a question for a person: an approval of a mutating tool
// call (Tool and Args set) or a fan-out, asked on the terminal or over
// NATS (<prefix>.ask.<run>.<agent>, request/reply) for a watcher to
// answer.
type AskRequest struct {
	V     int             `json:"v"`
	ID    string          `json:"id"`
	Run   string          `json:"run"`
	Agent string          `json:"agent"`
	Kind  string          `json:"kind"`
	Tool  string          `json:"tool"`
	Args  json.RawMessage `json:"args,omitempty"`
	// Diff is, for write_file, edit_file and apply_patch, the change the
	// call would make as a unified diff (cut at 8 KiB), to show before
	// asking.
	Diff string `json:"diff,omitempty"`
	// NoDiff is, for those tools, why there is no diff: the call would
	// fail so (an unread file, no match).
	NoDiff string `json:"no_diff,omitempty"`
	// Question is the question in words.
	Question string `json:"question"`
	// Choices, when set, are the answers to pick from (ask_user).
	Choices []string `json:"choices,omitempty"`
	// DeadlineUnixMS is when the default answer (no) applies.
	DeadlineUnixMS int64 `json:"deadline_unix_ms,omitempty"`
}

// Validate checks a question received from the wire.
func (r *AskRequest) Validate() error {
	if err := checkVersion("ask", r.V); err != nil {
		return err
	}
	for _, f := range []struct{ what, v string }{{"id", r.ID}, {"run", r.Run}, {"agent", r.Agent}} {
		if err := checkID(f.what, f.v); err != nil {
			return err
		}
	}
	if err := checkOptID("kind", r.Kind); err != nil {
		return err
	}
	if strings.TrimSpace(r.Question) == "" {
		return fmt.Errorf("%w: ask %s has no question", ErrBadMessage, r.ID)
	}
	return nil
}

// AskAnswer answers an AskRequest.
type AskAnswer struct {
	V        int    `json:"v"`
	ID       string `json:"id"`
	Approved bool   `json:"approved"`
	// Text is the answer to an ask_user question (a choice's text, or
	// the user's own words).
	Text       string `json:"text,omitempty"`
	AnsweredBy string `json:"answered_by,omitempty"`
}

// Validate checks an answer received from the wire.
func (a *AskAnswer) Validate() error {
	if err := checkVersion("answer", a.V); err != nil {
		return err
	}
	return checkID("id", a.ID)
}
