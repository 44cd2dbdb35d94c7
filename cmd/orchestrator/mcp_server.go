package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/runner"
	"github.com/troupe-ai/troupe/internal/setup"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/telemetry"
)

// mcpServer is troupe as an MCP server: each tool call starts, checks or
// cancels a run of this process; runs go on concurrently.
type mcpServer struct {
	ctx context.Context // the server's life: runs end with it
	cfg config.Config
	ws  string
	nb  *runner.Bus
	log zerolog.Logger
	// tracer makes each run's agents spans (zero: tracing is off).
	tracer telemetry.Tracer
	mu     sync.Mutex
	runs   map[string]*mcpRun
	wg     sync.WaitGroup
}

// mcpRun is one run started by a tool call.
type mcpRun struct {
	id       string
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	res      actors.Result
	err      error
	findings []string
}

// RunArgs are start_run's arguments.
type RunArgs struct {
	Task         string `json:"task" jsonschema:"the task, as for orchestrator run"`
	Placement    string `json:"placement,omitempty" jsonschema:"where kinds run, e.g. explore=remote,worker=auto (as run --placement)"`
	BudgetTokens int64  `json:"budget_tokens,omitempty" jsonschema:"the run's token budget (default: the configured one)"`
	Wait         bool   `json:"wait,omitempty" jsonschema:"wait for the run to end and return its answer (default: return the run ID at once)"`
}

// ExploreArgs are explore's arguments.
type ExploreArgs struct {
	Question string `json:"question" jsonschema:"the question about the workspace"`
	Agents   int    `json:"agents,omitempty" jsonschema:"explore agents to fan out (default 4)"`
}

// RunRef names a run.
type RunRef struct {
	Run  string `json:"run" jsonschema:"the run ID start_run returned"`
	Wait bool   `json:"wait,omitempty" jsonschema:"check_run: wait for the run to end"`
}

// RunStatus is what the tools answer about a run.
type RunStatus struct {
	Run       string   `json:"run"`
	Status    string   `json:"status" jsonschema:"running, completed, failed or cancelled"`
	Reason    string   `json:"reason,omitempty"`
	Answer    string   `json:"answer,omitempty"`
	Error     string   `json:"error,omitempty"`
	Tokens    int64    `json:"tokens,omitempty"`
	CostUSD   float64  `json:"cost_usd,omitempty"`
	ToolCalls int64    `json:"tool_calls,omitempty"`
	Findings  []string `json:"findings,omitempty" jsonschema:"path:line references the explore agents found"`
}

// newMCPServer lists troupe's tools on an MCP server.
func newMCPServer(s *mcpServer) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "troupe", Version: versionLine("orchestrator")}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "start_run", Description: "Start a troupe run (a team of LLM agents) on a task in the workspace. Returns the run ID, or with wait the run's answer."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a RunArgs) (*mcp.CallToolResult, RunStatus, error) {
			r, err := s.start(a.Task, a.Placement, a.BudgetTokens)
			if err != nil {
				return nil, RunStatus{}, err
			}
			return nil, s.status(ctx, r, a.Wait), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "explore", Description: "Answer a question about the workspace by fanning out read-only explore agents; returns the merged answer and the path:line findings."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a ExploreArgs) (*mcp.CallToolResult, RunStatus, error) {
			n := a.Agents
			if n <= 0 {
				n = 4
			}
			task := fmt.Sprintf("Answer this question about the workspace. Split it into up to %d independent parts and delegate each to an explore agent (delegate type=explore) in one turn, then merge their findings into one answer with path:line references.\n\nQuestion: %s", n, a.Question)
			r, err := s.start(task, "", 0)
			if err != nil {
				return nil, RunStatus{}, err
			}
			return nil, s.status(ctx, r, true), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "check_run", Description: "The status of a run started here: running, or its answer, tokens and cost."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a RunRef) (*mcp.CallToolResult, RunStatus, error) {
			r, err := s.lookup(a.Run)
			if err != nil {
				return nil, RunStatus{}, err
			}
			return nil, s.status(ctx, r, a.Wait), nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "cancel_run", Description: "Cancel a run started here; its agents stop and release their budget."},
		func(ctx context.Context, _ *mcp.CallToolRequest, a RunRef) (*mcp.CallToolResult, RunStatus, error) {
			r, err := s.lookup(a.Run)
			if err != nil {
				return nil, RunStatus{}, err
			}
			r.cancel()
			return nil, s.status(ctx, r, true), nil
		})
	return srv
}

func (s *mcpServer) lookup(id string) (*mcpRun, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[id]
	if r == nil {
		return nil, fmt.Errorf("no run %q was started by this server", id)
	}
	return r, nil
}

// start begins a run of task in the background.
func (s *mcpServer) start(task, placement string, budgetTokens int64) (*mcpRun, error) {
	if task == "" {
		return nil, fmt.Errorf("task is empty")
	}
	cfg := s.cfg
	if placement != "" {
		if err := (runner.Overrides{Placement: placement}).Apply(&cfg); err != nil {
			return nil, err
		}
	}
	opts, err := setup.TeamOptions(cfg, s.ws, s.log, nil)
	if err != nil {
		return nil, err
	}
	r := &mcpRun{id: uuid.NewString(), done: make(chan struct{})}
	opts.Task, opts.Run, opts.Tracer = task, r.id, s.tracer
	if budgetTokens > 0 {
		opts.Budget.Tokens = budgetTokens
	}
	opts.Artifacts = s.nb.Conn().Artifacts(r.id)
	ctx, cancel := context.WithCancel(s.ctx)
	r.cancel = cancel
	team, err := runner.Start(ctx, s.nb, runner.Params{Options: opts, Placement: cfg.Placement, LeaseTimeout: cfg.Node.LeaseTimeout,
		PlacementTimeout: cfg.Node.PlacementTimeout, RunLease: cfg.Node.RunLease, Sinks: []actors.Emitter{actors.EmitterFunc(r.collect)}, Log: s.log})
	if err != nil {
		cancel()
		setup.CloseToolSources(opts.ToolSources)
		return nil, err
	}
	s.mu.Lock()
	s.runs[r.id] = r
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		defer setup.CloseToolSources(opts.ToolSources)
		defer team.Close()
		res, err := team.Execute(ctx)
		r.mu.Lock()
		r.res, r.err = res, err
		r.mu.Unlock()
		close(r.done)
	}()
	return r, nil
}

// collect keeps the findings of the run's explore agents.
func (r *mcpRun) collect(ev messages.Event) {
	if ev.Type != messages.EvtAgentFinished || ev.Kind != "explore" {
		return
	}
	d, err := messages.DecodeAs[messages.AgentEnded](ev)
	if err != nil {
		return
	}
	r.mu.Lock()
	r.findings = append(r.findings, d.Findings...)
	r.mu.Unlock()
}

// status reports r, after waiting for its end when wait (or until ctx
// ends: then it is reported running).
func (s *mcpServer) status(ctx context.Context, r *mcpRun, wait bool) RunStatus {
	if wait {
		select {
		case <-r.done:
		case <-ctx.Done():
		}
	}
	st := RunStatus{Run: r.id, Status: "running"}
	select {
	case <-r.done:
	default:
		return st
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st.Status, st.Reason, st.Answer, st.Error = r.res.Status, r.res.Reason, r.res.Text, r.res.Err
	if r.err != nil {
		st.Status, st.Error = "failed", r.err.Error()
	}
	st.Tokens = int64(r.res.Usage.PromptTokens + r.res.Usage.CompletionTokens)
	if r.res.Budget != nil {
		st.Tokens, st.CostUSD, st.ToolCalls = r.res.Budget.Used.Tokens, r.res.Budget.Used.CostUSD, r.res.Budget.Used.ToolCalls
	}
	st.Findings = append([]string(nil), r.findings...)
	return st
}
