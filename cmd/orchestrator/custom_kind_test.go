package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// An agent definition file in the workspace becomes a kind the root can
// delegate to, with its own tools and prompt.
func TestCustomKindFromAgentFile(t *testing.T) {
	ws := t.TempDir()
	os.MkdirAll(filepath.Join(ws, ".troupe", "agents"), 0o755)
	os.WriteFile(filepath.Join(ws, ".troupe", "agents", "reviewer.md"),
		[]byte("---\nname: reviewer\ndescription: reviews code\ntools: Read, Grep\nmodel: haiku\n---\nYou are a strict reviewer.\n"), 0o644)
	os.WriteFile(filepath.Join(ws, ".troupe", "config.yaml"), []byte("agent:\n  plan_first: {root: false}\n"), 0o644)
	home := homeWith(t, "model:\n  cheap: tiny\n")
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"reviewer","task":"review"}`)}}},
			{Text: "reviewed"}}},
		{Match: llmtest.Matcher{Kind: "reviewer"}, Turns: []llmtest.Turn{{Text: "looks fine"}}},
	}})
	t.Cleanup(srv.Close)
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, home), false, "--workspace", ws, "review it")
	if code != exitOK || out != "reviewed\n" {
		t.Fatalf("exit %d %q\n%s", code, out, errs)
	}
	var rev llmtest.Recorded
	for _, r := range srv.Requests() {
		if r.Kind == "reviewer" {
			rev = r
		}
	}
	if !slices.Equal(rev.Tools, []string{"grep", "read_file", "think"}) || rev.Model != "tiny" || rev.Messages[0].Content[:26] != "You are a strict reviewer." {
		t.Errorf("reviewer request: tools %v model %q prompt %q", rev.Tools, rev.Model, rev.Messages[0].Content)
	}
}
