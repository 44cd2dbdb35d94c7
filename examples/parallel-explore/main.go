// Command parallel-explore fans one question about a codebase out to
// several cheap, read-only explore agents and prints what they found, each
// finding with its path:line.
//
// With OPENAI_API_KEY (or OPENAI_BASE_URL) set it uses that model; without
// either it runs offline against troupe's scripted OpenAI-compatible server,
// whose agents call the real tools on the real files of the workspace.
//
//	go run ./examples/parallel-explore --workspace . "where are retries configured?"
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"sync"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/messages"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("parallel-explore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	ws := fs.String("workspace", ".", "the repository to explore")
	n := fs.Int("explorers", 4, "how many explore agents to fan out to")
	model := fs.String("model", "gpt-4.1-mini", "the lead agent's model")
	cheap := fs.String("cheap-model", "gpt-4.1-nano", "the explore agents' model")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: parallel-explore [--workspace DIR] [--explorers N] [--model M] [--cheap-model M] QUESTION")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 || *n < 1 {
		if err == nil {
			fs.Usage()
		}
		return 2
	}
	question := fs.Arg(0)

	baseURL, key := os.Getenv("OPENAI_BASE_URL"), os.Getenv("OPENAI_API_KEY")
	if baseURL == "" && key == "" {
		url, closeSrv := scriptedModel(*n)
		defer closeSrv()
		baseURL, *model, *cheap = url, "scripted-lead", "scripted-explore"
		fmt.Fprintln(stderr, "no OPENAI_API_KEY: using the scripted model (real agents and tools, canned answers)")
	}
	client, err := llm.NewClient(llm.Config{BaseURL: baseURL, APIKey: key, Model: *model, Stream: true}, zerolog.Nop())
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}

	var mu sync.Mutex
	findings := map[string][]string{} // explore agent → its path:line findings
	task := fmt.Sprintf("Answer this question about the repository by delegating it to %d explore agents in parallel, "+
		"each looking from a different angle, then merge their findings: %s", *n, question)
	res, err := actors.Run(ctx, actors.Options{
		Workspace: *ws,
		Task:      task,
		Client:    client,
		Models:    actors.Models{Default: *model, Cheap: *cheap},
		Budget:    budget.Limits{Tokens: 1_000_000, PerKind: map[string]int{"explore": *n}},
		Events: actors.EmitterFunc(func(ev messages.Event) {
			if ev.Kind != actors.KindExplore || ev.Type != messages.EvtAgentFinished {
				return
			}
			if f := findingsIn(ev.Data); len(f) > 0 {
				mu.Lock()
				findings[ev.Agent] = f
				mu.Unlock()
			}
		}),
	})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	agents := make([]string, 0, len(findings))
	for a := range findings {
		agents = append(agents, a)
	}
	sort.Strings(agents)
	for _, a := range agents {
		for _, f := range findings[a] {
			fmt.Fprintf(stdout, "%s\t%s\n", f, a)
		}
	}
	fmt.Fprintf(stderr, "\n%s\n\n%s · %d explore agents reported · %d tokens\n",
		strings.TrimSpace(res.Text), res.Status, len(agents), res.Usage.Total())
	if res.Status != actors.StatusCompleted {
		return 1
	}
	return 0
}
