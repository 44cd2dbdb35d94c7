// Command monitor is a minimal swarm monitor: it subscribes to every
// troupe event on a NATS server (troupe.evt.>) with nats.go, decodes them
// with the messages package, prints one line per agent start and end, and
// when a run finishes prints its agent tree.
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
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
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

	tree := watch.NewTree(0)
	for {
		select {
		case <-ctx.Done():
			return 0
		case ev := <-events:
			tree.Apply(ev)
			switch ev.Type {
			case messages.EvtAgentStarted:
				fmt.Fprintf(stdout, "%s %-20s started (%s)\n", ev.Time.Format(time.TimeOnly), ev.Agent, ev.Kind)
			case messages.EvtAgentFinished, messages.EvtAgentFailed, messages.EvtAgentCancelled:
				if end, err := messages.DecodeAs[messages.AgentEnded](ev); err == nil {
					fmt.Fprintf(stdout, "%s %-20s %s: %d tokens, $%.4f\n", ev.Time.Format(time.TimeOnly), ev.Agent, end.Status,
						end.TokensIn+end.TokensOut, end.CostUSD)
				}
			case messages.EvtRunFinished:
				fmt.Fprintln(stdout, strings.Join(watch.Frame(tree, time.Now(), 120, false), "\n"))
				if *once {
					return 0
				}
			}
		}
	}
}
