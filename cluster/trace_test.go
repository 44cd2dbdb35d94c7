package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/telemetry"
	"github.com/troupe-ai/troupe/telemetry/telemetrytest"
)

// Remote agents join their parent's trace: the orchestrator's delegate
// call's trace context rides in the task's NATS headers, and the node
// (its own tracer provider, as a node process has) starts the agent's
// invoke_agent span under that delegate span, with the agent's chat and
// tool spans under it, all in the run's one trace.
func TestRemoteAgentSpansJoinTheParentsTrace(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(2, false)
	defer srv.Close()
	rcv := telemetrytest.NewReceiver(t)
	orch, err := telemetry.Start(t.Context(), telemetry.Config{Endpoint: rcv.Endpoint(), Service: telemetry.ServiceOrchestrator})
	if err != nil {
		t.Fatal(err)
	}
	nodeTP, err := telemetry.Start(t.Context(), telemetry.Config{Endpoint: rcv.Endpoint(), Service: telemetry.ServiceNode})
	if err != nil {
		t.Fatal(err)
	}
	n, err := StartNode(t.Context(), NodeOptions{Bus: wrap(t, connect(t, s)), ID: "n1", Name: "n1", Kinds: []string{"explore"}, Slots: 2,
		Agent: actors.Options{Workspace: workspace(t), Client: modelClient(t, srv), Tracer: nodeTP.Tracer(),
			Models: actors.Models{Default: "big", Cheap: "small"}, Log: zerolog.Nop()},
		AckWait: 5 * time.Second, Heartbeat: time.Second, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	run := "run-traced"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, connect(t, s)), Run: run,
		Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	checkFor(t, 10*time.Second, func() error {
		if len(remote.Nodes()) != 1 {
			return fmt.Errorf("%d nodes registered", len(remote.Nodes()))
		}
		return nil
	})
	res, err := actors.Run(t.Context(), actors.Options{Run: run, Workspace: workspace(t), Task: "find main",
		Client: modelClient(t, srv), Models: actors.Models{Default: "big", Cheap: "small"}, Tracer: orch.Tracer(),
		Settings: actors.Settings{PlanFirst: map[string]bool{"root": false}, FanoutThreshold: 20},
		Placer:   remote.Placer(), OnBudget: remote.ServeBudget, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != actors.StatusCompleted {
		t.Fatalf("run: %+v", res.AgentResult)
	}
	if err := n.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, p := range []*telemetry.Provider{orch, nodeTP} {
		if err := p.ShutdownWithin(10 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	spans := rcv.Spans()
	byID := map[string]telemetrytest.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	roots := rcv.Named("invoke_agent root")
	if len(roots) != 1 || roots[0].Service != telemetry.ServiceOrchestrator {
		t.Fatalf("root spans: %+v", roots)
	}
	trace := roots[0].TraceID
	children := rcv.Named("invoke_agent explore")
	if len(children) != 2 {
		t.Fatalf("%d remote agent spans, want 2; spans: %d", len(children), len(spans))
	}
	under := map[string]bool{}
	for _, c := range children {
		parent, ok := byID[c.ParentID]
		switch {
		case c.TraceID != trace:
			t.Errorf("remote agent %s in trace %s, the run's is %s", c.Str("gen_ai.agent.id"), c.TraceID, trace)
		case c.Service != telemetry.ServiceNode || c.Str("troupe.node") != "n1":
			t.Errorf("remote agent span from service %q, node %q", c.Service, c.Str("troupe.node"))
		case !ok || parent.Name != "execute_tool delegate" || parent.Service != telemetry.ServiceOrchestrator || parent.ParentID != roots[0].SpanID:
			t.Errorf("remote agent %s is not under one of the root's delegate spans: parent %+v", c.Str("gen_ai.agent.id"), parent)
		}
		under[c.ParentID] = true
	}
	if len(under) != 2 {
		t.Errorf("both remote agents hang under the same delegate span")
	}
	// The remote agents' own model and tool calls are in the trace, under them.
	for _, prefix := range []string{"chat small", "execute_tool grep"} {
		got := rcv.Named(prefix)
		if len(got) < 2 {
			t.Errorf("%d %q spans from the nodes, want 2 or more", len(got), prefix)
		}
		for _, sp := range got {
			if p := byID[sp.ParentID]; sp.TraceID != trace || p.Name != "invoke_agent explore" {
				t.Errorf("%s span under %q in trace %s", sp.Name, p.Name, sp.TraceID)
			}
		}
	}
}
