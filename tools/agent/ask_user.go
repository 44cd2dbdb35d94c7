package agent

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed ask_user.md
var askUserDoc string

// Asker puts a question to the user and returns the answer; it blocks
// until there is one or ctx ends. The agent actor provides it.
type Asker interface {
	AskUser(ctx context.Context, question string, choices []string) (string, error)
}

// AskUserParams are ask_user's arguments.
type AskUserParams struct {
	Question string   `json:"question" jsonschema:"the question, self-contained: the user has not seen your conversation"`
	Choices  []string `json:"choices,omitempty" jsonschema:"answers to pick from, when the answer is one of a few"`
}

// AskUser returns the ask_user tool: a question for the person running
// the team, answered on the terminal or by a watcher over NATS.
func AskUser() tools.Tool {
	return tools.New(tools.Spec{Name: NameAskUser, Description: askUserDoc, ReadOnly: true, Effects: true, Cacheable: false,
		Parallel: tools.Sequential, Tier: tools.TierOnDemand, Truncation: tools.Head(8 * 1024)}, runAskUser)
}

// ErrNobodyToAsk is what ask_user reports in a run nobody watches.
var ErrNobodyToAsk = errors.New("nobody can answer questions in this run (no terminal, and not started with --ask-via nats); decide yourself and say what you assumed")

func runAskUser(ctx context.Context, s *tools.Session, p AskUserParams) (tools.Result, error) {
	q := strings.TrimSpace(p.Question)
	if q == "" {
		return tools.Errorf("ask_user: question is empty"), nil
	}
	asker, _ := s.Attached(askerKey{}).(Asker)
	if asker == nil {
		return tools.Errorf("ask_user: %v", ErrNobodyToAsk), nil
	}
	ans, err := asker.AskUser(ctx, q, p.Choices)
	switch {
	case ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case err != nil:
		return tools.Errorf("ask_user: no answer (%v); decide yourself and say what you assumed", err), nil
	case strings.TrimSpace(ans) == "":
		return tools.Errorf("ask_user: the user gave no answer; decide yourself and say what you assumed"), nil
	}
	r := tools.Text(fmt.Sprintf("The user answered: %s", ans)).WithMeta("answer", ans)
	if len(p.Choices) > 0 && !slices.Contains(p.Choices, ans) {
		r = r.WithMeta("free_text", true)
	}
	return r, nil
}
