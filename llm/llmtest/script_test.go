package llmtest_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

func TestRoundsPerAgentAndExhaustion(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{llmtest.Text("one"), llmtest.Text("two")}},
	}})
	defer srv.Close()
	c := client(srv)
	ask := func(agent string) string {
		cc, err := c.Chat.Completions.New(t.Context(), params("look"), as(agent, "explore")...)
		if err != nil {
			t.Fatal(err)
		}
		return cc.Choices[0].Message.Content
	}
	// Interleaved agents each walk the script on their own.
	got := []string{ask("x"), ask("y"), ask("x"), ask("x"), ask("y")}
	want := []string{"one", "one", "two", llmtest.ExhaustedText, "two"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answers = %q, want %q", got, want)
	}
	rounds := []int{}
	for _, r := range srv.RequestsFrom("x") {
		rounds = append(rounds, r.Round)
	}
	if fmt.Sprint(rounds) != "[1 2 3]" {
		t.Errorf("rounds of x = %v", rounds)
	}
	if rs := srv.RequestsFrom("x"); !rs[2].Exhausted || rs[1].Exhausted {
		t.Errorf("exhausted flags wrong: %+v", rs)
	}
}

func TestRepeat(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Repeat: true, Turns: []llmtest.Turn{llmtest.Text("a"), llmtest.Text("b")}},
	}})
	defer srv.Close()
	c := client(srv)
	var got []string
	for range 5 {
		cc, err := c.Chat.Completions.New(t.Context(), params("t"), as("r", "root")...)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, cc.Choices[0].Message.Content)
	}
	if strings.Join(got, "") != "ababa" {
		t.Errorf("answers = %v", got)
	}
	if r := srv.Requests(); r[4].Round != 5 || r[4].Exhausted {
		t.Errorf("fifth request: round %d exhausted %v", r[4].Round, r[4].Exhausted)
	}
}

func TestMatchers(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Agent: "special"}, Turns: []llmtest.Turn{llmtest.Text("by agent")}},
		{Match: llmtest.Matcher{Kind: "planner", TaskContains: "plan the"}, Turns: []llmtest.Turn{llmtest.Text("by kind and task")}},
		{Match: llmtest.Matcher{TaskContains: "README"}, Turns: []llmtest.Turn{llmtest.Text("by task")}},
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{llmtest.Text("fallback")}},
	}})
	defer srv.Close()
	c := client(srv)
	cases := []struct {
		agent, kind, task, want string
	}{
		{"special", "worker", "plan the README", "by agent"},
		{"p1", "planner", "please plan the work", "by kind and task"},
		{"p2", "worker", "please plan the work", "fallback"},
		{"w1", "worker", "summarise README.md", "by task"},
		{"p3", "planner", "summarise README.md", "by task"},
		{"", "", "anything", "fallback"},
	}
	for _, tc := range cases {
		cc, err := c.Chat.Completions.New(t.Context(), params(tc.task), as(tc.agent, tc.kind)...)
		if err != nil {
			t.Fatal(err)
		}
		if got := cc.Choices[0].Message.Content; got != tc.want {
			t.Errorf("agent %q kind %q task %q: got %q, want %q", tc.agent, tc.kind, tc.task, got, tc.want)
		}
	}
}

func TestNoMatchIsExhausted(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "explore"}, Turns: []llmtest.Turn{llmtest.Text("x")}},
	}})
	defer srv.Close()
	cc, err := client(srv).Chat.Completions.New(t.Context(), params("t"), as("r", "root")...)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != llmtest.ExhaustedText {
		t.Errorf("got %q", cc.Choices[0].Message.Content)
	}
	if r := srv.Requests()[0]; !r.Exhausted || r.Script != -1 {
		t.Errorf("recorded exhausted=%v script=%d", r.Exhausted, r.Script)
	}
}

func TestDynamicTurnEchoes(t *testing.T) {
	t.Parallel()
	echo := llmtest.Turn{Dynamic: func(r llmtest.Recorded) llmtest.Turn {
		return llmtest.Text(fmt.Sprintf("round %d: %s", r.Round, r.Task))
	}}
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Fallback: true}, Turns: []llmtest.Turn{echo, echo}},
	}})
	defer srv.Close()
	c := client(srv)
	for i, want := range []string{"round 1: ping", "round 2: ping"} {
		cc, _, err := stream(t, c, params("ping"), as("d", "root")...)
		if err != nil {
			t.Fatal(err)
		}
		if got := cc.Choices[0].Message.Content; got != want {
			t.Errorf("call %d: %q, want %q", i, got, want)
		}
	}
}

func TestDynamicTurnPanicIsAnError(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{{Match: llmtest.Matcher{Fallback: true},
		Turns: []llmtest.Turn{{Dynamic: func(llmtest.Recorded) llmtest.Turn { panic("test bug") }}, llmtest.Text("next")}}}})
	defer srv.Close()
	c := client(srv)
	_, err := c.Chat.Completions.New(t.Context(), params("t"))
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("err = %v, want a 500", err)
	}
	if r := srv.Requests()[0]; r.Reply.Fail == nil || !strings.Contains(r.Reply.Fail.Message, "dynamic turn panicked: test bug") {
		t.Errorf("recorded reply %+v", r.Reply)
	}
	// The failure did not complete the round; the script goes on.
	cc, err := c.Chat.Completions.New(t.Context(), params("t"))
	if err != nil || cc.Choices[0].Message.Content != "next" {
		t.Fatalf("after the panic: %v", err)
	}
}
