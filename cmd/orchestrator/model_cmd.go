package main

import (
	"context"
	"fmt"
	"io"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// The model command's help and flags, registered beside the others.
func init() {
	commandHelp["model"] = modelHelp
	commandFlags["model"] = flagNames{[]string{"listen", "script"}, []string{"scripted"}}
}

const modelHelp = `Usage: orchestrator model --scripted [--listen 127.0.0.1:8300] [--script FILE]

Serves a SCRIPTED OpenAI-compatible model (canned answers, no key, nothing
leaves this machine) until interrupted, so run, node, mcp and the web view
can be tried without a real model: point them at it with
OPENAI_BASE_URL=http://ADDR/v1 (no OPENAI_API_KEY needed), e.g.
OPENAI_BASE_URL=http://127.0.0.1:8300/v1 orchestrator run "Where is X?". Its built-in
script: a lead agent whose task starts a change ("Fix ", "Try ",
"Refactor ", "Rename ") delegates one worker, which writes
` + llmtest.TryOutFile + ` in the workspace; any other lead agent delegates
one explore agent, which lists the workspace's top folder; every answer says
it is scripted. The tools the agents call are real and act on real files.

Flags:
  --scripted        serve the scripted model (the only model it serves)
  --listen ADDR     host:port to listen on (default 127.0.0.1:0, a free port)
  --script FILE     play this script instead (llm/llmtest's JSON, as
                    cmd/orchestrator/demo/script.json)

Examples:
  orchestrator model --scripted --listen 127.0.0.1:8300 &
  orchestrator model --scripted --script my-script.json
`

// cmdModel serves the scripted model until ctx ends.
func cmdModel(ctx context.Context, args []string, stderr io.Writer) (int, error) {
	fs := flagsOf("model")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 || !fs.bools["scripted"] {
		return exitUsage, usageErr("model --scripted [--listen ADDR] [--script FILE]: the scripted model is the only one it serves")
	}
	script := llmtest.TryOut()
	if path := fs.values["script"]; path != "" {
		if script, err = llmtest.LoadScript(path); err != nil {
			return exitUsage, usageErr("--script: %v", err)
		}
	}
	listen := fs.values["listen"]
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	srv, err := llmtest.Listen(listen, script)
	if err != nil {
		return exitFailed, fmt.Errorf("model: %w", err)
	}
	defer srv.Close()
	fmt.Fprintf(stderr, "troupe model: a SCRIPTED model (canned answers, no key) at %s\n"+
		"point run, node and mcp at it: export OPENAI_BASE_URL=%s   (no OPENAI_API_KEY needed)\nready; Ctrl-C stops it.\n", srv.URL(), srv.URL())
	<-ctx.Done()
	return exitOK, nil
}
