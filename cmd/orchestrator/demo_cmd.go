package main

import (
	"context"
	"embed"
	"errors"
	"strconv"

	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/watch"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

//go:embed demo/script.json demo/repo
var demoFS embed.FS

const demoTask = "Find where discounts are applied and make sure a percentage above 100 can never produce a negative total."

// cmdDemo runs a real team (actors, tools, budget, NATS events, HTTP
// streaming) on a small repository, against the scripted OpenAI-compatible
// server instead of a model: it needs no API key and no network. With
// --nodes N it also starts N node processes and places the explore agents
// on them.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flagsOf("demo")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("demo [--workspace DIR [--in-place]] [--nodes N] [--keep]")
	}
	nodes := 0
	if v := fs.values["nodes"]; v != "" {
		if nodes, err = strconv.Atoi(v); err != nil || nodes < 0 || nodes > 16 {
			return exitUsage, usageErr("--nodes: want a number from 0 to 16, got %q", v)
		}
	}
	ws, cleanup, err := demoWorkspace(fs.values["workspace"], fs.bools["in-place"], fs.bools["keep"], stderr)
	if err != nil {
		return exitUsage, err
	}
	defer cleanup()
	skipped, err := writeDemoRepo(ws)
	if err != nil {
		return exitFailed, err
	}
	if len(skipped) > 0 && fs.bools["in-place"] { // created since demoWorkspace looked: the agents must not touch it
		return exitFailed, fmt.Errorf("demo: %s appeared in %s as the demo started; nothing was run", strings.Join(skipped, ", "), ws)
	}
	for _, name := range skipped {
		fmt.Fprintf(stderr, "demo: %s exists in the workspace; the copy keeps it as it is\n", name)
	}
	raw, err := demoFS.ReadFile("demo/script.json")
	if err != nil {
		return exitFailed, err
	}
	script, err := llmtest.ParseScript(raw)
	if err != nil {
		return exitFailed, fmt.Errorf("demo script: %w", err)
	}
	srv := llmtest.New(script)
	defer srv.Close()
	client, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "demo-large", Stream: true, Pricing: demoPricing}, zerolog.Nop())
	if err != nil {
		return exitFailed, err
	}
	fmt.Fprintf(stderr, "troupe demo: the MODEL IS SCRIPTED: a local OpenAI-compatible server at %s plays a recorded conversation.\n", srv.URL())
	fmt.Fprintf(stderr, "Everything else is real: agent actors, tools on the files in %s, the budget actor, NATS events, streaming HTTP.\n", ws)
	fmt.Fprintf(stderr, "A real model: export OPENAI_API_KEY=sk-... (or OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama) and run\n  orchestrator run --workspace DIR \"your task\"\n\n")
	run := uuid.NewString()
	nb, err := startBus(ctx, config.NATS{Ephemeral: true, Prefix: "troupe"}, bus.StreamLimits{}, "demo", ws, zerolog.Nop())
	if err != nil {
		return exitFailed, err
	}
	defer nb.close(ctx)
	fmt.Fprintf(stderr, "events: embedded NATS at %s\nwatch it from another terminal: orchestrator watch --nats %s%s --run %s\n", nb.url, nb.url, nb.creds.credsFlag(bus.RoleWatcher), run)
	opts := actors.Options{Run: run, Workspace: ws, Task: demoTask, Client: client, Log: zerolog.Nop(),
		Models: actors.Models{Default: "demo-large", Cheap: "demo-small", Cost: demoPricing.Cost}}
	if nodes > 0 {
		stopNodes, err := startDemoNodes(ctx, nodes, nb.url, nb.creds.path(bus.RoleNode), srv.URL(), ws, stderr)
		if err != nil {
			return exitFailed, err
		}
		defer stopNodes()
		remote, err := startPlacement(ctx, nb, config.Config{Placement: map[string]string{"explore": "remote"}}, run, ws, nb.pub, zerolog.Nop())
		if err != nil {
			return exitFailed, err
		}
		defer remote.Close()
		opts.Placer, opts.OnBudget = remote.Placer(), remote.ServeBudget
	}
	fmt.Fprintf(stderr, "\ntask: %s\n\n", demoTask)
	live := newLiveView(stderr, os.Getenv)
	metrics := watch.NewMetricsCollector()
	if err := live.follow(ctx, nb, run, metrics.Apply); err != nil {
		return exitFailed, err
	}
	opts.Events = nb.pub
	opts.EventsDropped = nb.dropped
	res, err := actors.Run(ctx, opts)
	live.waitFinished(5 * time.Second)
	live.Close()
	if err != nil {
		return exitFailed, err
	}
	fmt.Fprintln(stderr)
	printText(stdout, res.Text)
	fmt.Fprintf(stderr, "\n%s · %s\n", endWords(res.Status, res.Reason, res.Rounds), res.Wall.Round(time.Millisecond))
	printRunSummary(stderr, res.Budget)
	printMetrics(stderr, metrics.Metrics())
	if b, err := os.ReadFile(filepath.Join(ws, "discount.go")); err == nil {
		fmt.Fprintf(stderr, "\ndiscount.go after the run:\n%s", indent(string(b)))
	}
	if res.Status != actors.StatusCompleted {
		return exitFailed, nil
	}
	return exitOK, nil
}

// demoPricing prices the demo's models (made-up prices, for the cost table).
var demoPricing = llm.Pricing{"demo-large": {Input: 2.0, CachedInput: 0.5, Output: 8.0}, "demo-small": {Input: 0.1, CachedInput: 0.025, Output: 0.4}}

// demoRepoFiles are the sample repository's files by the name they take
// in a workspace (go.mod.txt → go.mod).
func demoRepoFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(demoFS, "demo/repo", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := demoFS.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimSuffix(strings.TrimPrefix(p, "demo/repo/"), ".txt")] = data
		return nil
	})
	return files, err
}

// existingDemoFiles lists the sample repository's files that dir holds
// already (anything by that name, a directory or a link included).
func existingDemoFiles(dir string) ([]string, error) {
	files, err := demoRepoFiles()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if _, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			out = append(out, name)
		}
	}
	return out, nil
}

// writeDemoRepo adds the sample repository's files to dir. A file that
// exists already is never overwritten: it is skipped and named in skipped.
func writeDemoRepo(dir string) (skipped []string, err error) {
	files, err := demoRepoFiles()
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			skipped = append(skipped, name)
			continue
		}
		if err != nil {
			return skipped, err
		}
		if _, err := f.Write(files[name]); err != nil {
			f.Close()
			return skipped, err
		}
		if err := f.Close(); err != nil {
			return skipped, err
		}
	}
	return skipped, nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
