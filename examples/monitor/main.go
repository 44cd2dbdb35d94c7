// Command monitor is a minimal swarm monitor: it subscribes to every
// troupe event on a NATS server (troupe.evt.>) with nats.go, decodes them
// with the messages package, prints one line per agent start and end, and
// when a run finishes prints its agent tree. It needs nats.go and
// troupe's messages package, nothing else.
//
//	go run ./examples/monitor --nats nats://127.0.0.1:4222
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/messages"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("monitor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("nats", "nats://127.0.0.1:4222", "the NATS server (orchestrator run prints it)")
	once := fs.Bool("once", false, "exit after the first run finishes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	nc, err := nats.Connect(*url)
	if err != nil {
		fmt.Fprintf(stderr, "monitor: %s: %v\n", *url, err)
		return 2
	}
	defer nc.Close()

	events := make(chan messages.Event, 4096)
	sub, err := nc.Subscribe("troupe.evt.>", func(m *nats.Msg) {
		var ev messages.Event
		if json.Unmarshal(m.Data, &ev) != nil || ev.Validate() != nil {
			return // not a troupe event: skip it
		}
		events <- ev
	})
	if err != nil {
		fmt.Fprintf(stderr, "monitor: %v\n", err)
		return 1
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		fmt.Fprintf(stderr, "monitor: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "monitoring troupe.evt.> on %s\n", *url)

	runs := map[string]*runTree{}
	for {
		select {
		case <-ctx.Done():
			return 0
		case ev := <-events:
			r := runs[ev.Run]
			if r == nil {
				r = &runTree{agents: map[string]*agent{}}
				runs[ev.Run] = r
			}
			r.add(ev)
			switch ev.Type {
			case messages.EvtAgentStarted:
				fmt.Fprintf(stdout, "%s %-20s started (%s)\n", ev.Time.Format(time.TimeOnly), printable(ev.Agent), printable(ev.Kind))
			case messages.EvtAgentFinished, messages.EvtAgentFailed, messages.EvtAgentCancelled:
				if end, err := messages.DecodeAs[messages.AgentEnded](ev); err == nil {
					fmt.Fprintf(stdout, "%s %-20s %s: %d tokens, $%.4f\n", ev.Time.Format(time.TimeOnly), printable(ev.Agent), printable(end.Status),
						end.TokensIn+end.TokensOut, end.CostUSD)
				}
			case messages.EvtRunFinished:
				if fin, err := messages.DecodeAs[messages.RunFinished](ev); err == nil {
					r.print(stdout, ev.Run, fin)
				}
				delete(runs, ev.Run)
				if *once {
					return 0
				}
			}
		}
	}
}

// agent is one agent of a run as its events describe it.
type agent struct {
	id, parent, kind, status string
	tokens                   int
	children                 []string
}

// runTree is a run's agents, in order of appearance.
type runTree struct {
	agents map[string]*agent
	order  []string
}

func (r *runTree) add(ev messages.Event) {
	if ev.Agent == "run" || ev.Kind == "node" {
		return // the run's own events and nodes' are not agents
	}
	a := r.agents[ev.Agent]
	if a == nil {
		a = &agent{id: ev.Agent, parent: ev.Parent, kind: ev.Kind, status: "running"}
		r.agents[ev.Agent] = a
		r.order = append(r.order, ev.Agent)
		if p := r.agents[ev.Parent]; p != nil {
			p.children = append(p.children, ev.Agent)
		}
	}
	if end, err := messages.DecodeAs[messages.AgentEnded](ev); err == nil {
		a.status, a.tokens = end.Status, end.TokensIn+end.TokensOut
	}
}

// print writes the run's header and its agents, each under its parent.
func (r *runTree) print(w io.Writer, run string, fin messages.RunFinished) {
	state := fin.Status
	if state == "completed" {
		state = "finished"
	}
	fmt.Fprintf(w, "run %.8s · %s · %d agents · %d tokens · $%.4f\n", printable(run), printable(state), len(r.agents), fin.Tokens, fin.CostUSD)
	seen := map[string]bool{}
	var walk func(id string, depth int)
	walk = func(id string, depth int) {
		a := r.agents[id]
		if a == nil || seen[id] {
			return
		}
		seen[id] = true
		fmt.Fprintf(w, "%s%-22s %-8s %-10s %d tokens\n", strings.Repeat("  ", depth+1), printable(a.id), printable(a.kind), printable(a.status), a.tokens)
		for _, c := range a.children {
			walk(c, depth+1)
		}
	}
	for _, id := range r.order {
		if r.agents[r.agents[id].parent] == nil {
			walk(id, 0)
		}
	}
}

// printable keeps text from the wire from driving the terminal: control
// characters are shown quoted.
func printable(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return r < 0x20 || (r >= 0x7f && r < 0xa0) }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}
