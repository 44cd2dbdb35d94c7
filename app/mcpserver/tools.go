package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// exploreTask is the root's task for a question, fanned out to n agents.
const exploreTask = "Answer this question about the workspace. Split it into up to %d independent parts and delegate each to an explore agent (delegate type=explore) in one turn, then merge their findings into one answer with path:line references.\n\nQuestion: %s"

// addTools lists troupe's tools on the MCP server. Each handler decodes
// and checks its arguments before anything runs: a bad argument is a
// JSON-RPC invalid-params error naming it.
func (s *Server) addTools() {
	out, err := jsonschema.For[RunStatus](nil)
	if err != nil {
		panic(err)
	}
	s.mcp.AddTool(&mcp.Tool{Name: "start_run", OutputSchema: out,
		Description: "Start a troupe run (a team of LLM agents) on a task in the workspace. Returns the run ID at once (follow it with check_run), or with wait the run's answer, sending progress meanwhile.",
		InputSchema: inputSchema[RunArgs](func(p map[string]*jsonschema.Schema) {
			p["task"].MinLength, p["task"].MaxLength = ptr(1), ptr(maxTaskChars)
			p["budget_tokens"].Minimum = ptr(0.0)
		})}, s.startRun)
	s.mcp.AddTool(&mcp.Tool{Name: "explore", OutputSchema: out,
		Description: "Answer a question about the workspace by fanning out read-only explore agents. Returns the run ID at once, or with wait the merged answer and the path:line findings, sending progress meanwhile.",
		InputSchema: inputSchema[ExploreArgs](func(p map[string]*jsonschema.Schema) {
			p["question"].MinLength, p["question"].MaxLength = ptr(1), ptr(maxTaskChars)
			p["agents"].Minimum, p["agents"].Maximum = ptr(1.0), ptr(float64(maxAgents))
		})}, s.explore)
	s.mcp.AddTool(&mcp.Tool{Name: "check_run", OutputSchema: out,
		Description: "The status of a run started here: running (its agents and tokens so far), or its answer, tokens and cost.",
		InputSchema: inputSchema[RunRef](func(p map[string]*jsonschema.Schema) { p["run"].MinLength = ptr(1) })}, s.checkRun)
	s.mcp.AddTool(&mcp.Tool{Name: "cancel_run", OutputSchema: out,
		Description: "Cancel a run started here; its agents stop and release their budget. Returns once the run has ended.",
		InputSchema: inputSchema[RunRef](func(p map[string]*jsonschema.Schema) { p["run"].MinLength = ptr(1) })}, s.cancelRun)
}

func (s *Server) startRun(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := decodeArgs[RunArgs](req.Params.Arguments)
	if err == nil {
		err = a.check()
	}
	if err != nil {
		return failed(err)
	}
	r, err := s.start(a.Task, a.Placement, a.BudgetTokens)
	if err != nil {
		return failed(err)
	}
	if !a.Wait {
		return result(r.status())
	}
	return result(s.await(ctx, req, r, true))
}

func (s *Server) explore(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, err := decodeArgs[ExploreArgs](req.Params.Arguments)
	if err == nil {
		err = a.check()
	}
	if err != nil {
		return failed(err)
	}
	r, err := s.start(fmt.Sprintf(exploreTask, a.Agents, a.Question), "", 0)
	if err != nil {
		return failed(err)
	}
	if !a.Wait {
		return result(r.status())
	}
	return result(s.await(ctx, req, r, true))
}

func (s *Server) checkRun(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	a, r, err := s.ref(req)
	if err != nil {
		return failed(err)
	}
	if !a.Wait {
		return result(r.status())
	}
	return result(s.await(ctx, req, r, false))
}

func (s *Server) cancelRun(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	_, r, err := s.ref(req)
	if err != nil {
		return failed(err)
	}
	r.cancel()
	return result(s.await(ctx, req, r, false))
}

// ref decodes a run reference and finds its run.
func (s *Server) ref(req *mcp.CallToolRequest) (RunRef, *run, error) {
	a, err := decodeArgs[RunRef](req.Params.Arguments)
	if err == nil {
		err = a.check()
	}
	if err != nil {
		return a, nil, err
	}
	r, err := s.runs.get(a.Run)
	return a, r, err
}

// failed answers a call that failed: arguments that cannot be used as a
// JSON-RPC error, anything else (a run that could not start, or is not
// known) as a tool result saying what went wrong.
func failed(err error) (*mcp.CallToolResult, error) {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return nil, rpc
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
}

// result is a tool result carrying st, structured and as JSON text.
func result(st RunStatus) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil
}
