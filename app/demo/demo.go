// Package demo is `orchestrator demo`: a real team (actors, tools, budget,
// NATS events, streaming HTTP) on a small sample repository, against the
// scripted OpenAI-compatible server instead of a model, so it needs no API
// key and no network; with Options.Nodes it also starts node processes of
// the running program and places the explore agents on them.
package demo

import (
	"context"
	"embed"
	"errors"

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
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/console"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/telemetry"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

//go:embed sample/script.json sample/repo
var demoFS embed.FS

const demoTask = "Find where discounts are applied and make sure a percentage above 100 can never produce a negative total."

// Options are the demo's settings: its command line.
type Options struct {
	// Workspace is the directory whose copy (or, InPlace, itself) the demo
	// adds the sample repository to; "" for a temporary one.
	Workspace string
	// Nodes is how many node processes to start (0 to 16).
	Nodes int
	// Keep keeps the temporary workspace; InPlace works in Workspace itself.
	Keep, InPlace bool
}

// Run runs the demo: completed says whether its run completed. An error
// the caller made (runner.ErrUsage) is marked so.
func Run(ctx context.Context, f Options, stdout, stderr io.Writer) (completed bool, err error) {
	ws, cleanup, err := demoWorkspace(f.Workspace, f.InPlace, f.Keep, stderr)
	if err != nil {
		return false, err
	}
	defer cleanup()
	if err := fillDemoWorkspace(ws, f.InPlace, stderr); err != nil {
		return false, err
	}
	srv, client, err := startDemoModel()
	if err != nil {
		return false, err
	}
	defer srv.Close()
	demoIntro(stderr, srv.URL(), ws)
	nb, err := runner.StartBus(ctx, config.NATS{Ephemeral: true, Prefix: "troupe"}, bus.StreamLimits{}, "demo", ws, zerolog.Nop())
	if err != nil {
		return false, err
	}
	defer nb.Close(ctx)
	// Traces when the environment names a collector (the demo reads no
	// config file); its node processes inherit the same variables.
	tp, stopTracing, err := setup.Tracing(ctx, os.Getenv(telemetry.EnvEndpoint), telemetry.ServiceOrchestrator, os.Getenv, warnLog(stderr))
	if err != nil {
		return false, runner.Usage("%v", err)
	}
	defer stopTracing()
	p := runner.Params{Options: actors.Options{Run: uuid.NewString(), Workspace: ws, Task: demoTask, Client: client, Log: zerolog.Nop(),
		Models: actors.Models{Default: "demo-large", Cheap: "demo-small", Cost: demoPricing.Cost}, Tracer: tp.Tracer()}}
	fmt.Fprintf(stderr, "events: embedded NATS at %s\nwatch it from another terminal: %s\n", nb.URL(), nb.WatchCommand(p.Options.Run))
	if f.Nodes > 0 {
		stopNodes, err := startDemoNodes(ctx, f.Nodes, nb.URL(), nb.Creds().Node, srv.URL(), ws, stderr)
		if err != nil {
			return false, err
		}
		defer stopNodes()
		p.Placement = map[string]string{"explore": "remote"}
	}
	fmt.Fprintf(stderr, "\ntask: %s\n\n", demoTask)
	live := console.NewLive(stderr, os.Getenv)
	defer live.Close()
	p.Sinks = []actors.Emitter{live}
	r, err := runner.Start(ctx, nb, p)
	if err != nil {
		return false, err
	}
	defer r.Close()
	live.Begin()
	res, err := r.Execute(ctx)
	live.Close()
	if err != nil {
		return false, err
	}
	return reportDemo(stdout, stderr, ws, res, r), nil
}

// fillDemoWorkspace writes the sample repository into ws. A file of it
// that exists is kept as it is (and said so); in place, one that appeared
// since demoWorkspace looked stops the demo before anything runs.
func fillDemoWorkspace(ws string, inPlace bool, stderr io.Writer) error {
	skipped, err := writeDemoRepo(ws)
	if err != nil {
		return err
	}
	if len(skipped) > 0 && inPlace { // created since demoWorkspace looked: the agents must not touch it
		return fmt.Errorf("demo: %s appeared in %s as the demo started; nothing was run", strings.Join(skipped, ", "), ws)
	}
	for _, name := range skipped {
		fmt.Fprintf(stderr, "demo: %s exists in the workspace; the copy keeps it as it is\n", name)
	}
	return nil
}

// startDemoModel starts the scripted model server and a client of it.
func startDemoModel() (*llmtest.Server, llm.Client, error) {
	raw, err := demoFS.ReadFile("sample/script.json")
	if err != nil {
		return nil, nil, err
	}
	script, err := llmtest.ParseScript(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("demo script: %w", err)
	}
	srv := llmtest.New(script)
	client, err := llm.NewClient(llm.Config{BaseURL: srv.URL(), Model: "demo-large", Stream: true, Pricing: demoPricing}, zerolog.Nop())
	if err != nil {
		srv.Close()
		return nil, nil, err
	}
	return srv, client, nil
}

// demoIntro says plainly that the model is scripted and all else is real.
func demoIntro(w io.Writer, modelURL, ws string) {
	fmt.Fprintf(w, "troupe demo: the MODEL IS SCRIPTED: a local OpenAI-compatible server at %s plays a recorded conversation.\n", modelURL)
	fmt.Fprintf(w, "Everything else is real: agent actors, tools on the files in %s, the budget actor, NATS events, streaming HTTP.\n", ws)
	fmt.Fprintf(w, "A real model: export OPENAI_API_KEY=sk-... (or OPENAI_BASE_URL=http://localhost:11434/v1 for Ollama) and run\n  orchestrator run --workspace DIR \"your task\"\n\n")
}

// reportDemo prints the answer, the totals, the metrics and the edited
// file, and says whether the run completed.
func reportDemo(stdout, stderr io.Writer, ws string, res actors.Result, r *runner.Run) bool {
	fmt.Fprintln(stderr)
	console.PrintText(stdout, res.Text)
	fmt.Fprintf(stderr, "\n%s · %s\n", console.EndWords(res.Status, res.Reason, res.Rounds), res.Wall.Round(time.Millisecond))
	console.PrintRunSummary(stderr, res.Budget)
	console.PrintMetrics(stderr, r.Metrics.Metrics())
	if b, err := os.ReadFile(filepath.Join(ws, "discount.go")); err == nil {
		fmt.Fprintf(stderr, "\ndiscount.go after the run:\n%s", indent(string(b)))
	}
	return res.Status == actors.StatusCompleted
}

// demoPricing prices the demo's models (made-up prices, for the cost table).
var demoPricing = llm.Pricing{"demo-large": {Input: 2.0, CachedInput: 0.5, Output: 8.0}, "demo-small": {Input: 0.1, CachedInput: 0.025, Output: 0.4}}

// demoRepoFiles are the sample repository's files by the name they take
// in a workspace (go.mod.txt → go.mod).
func demoRepoFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(demoFS, "sample/repo", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := demoFS.ReadFile(p)
		if err != nil {
			return err
		}
		files[strings.TrimSuffix(strings.TrimPrefix(p, "sample/repo/"), ".txt")] = data
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

// warnLog logs warnings only, as lines on w (an unreachable collector's
// one line, say).
func warnLog(w io.Writer) zerolog.Logger {
	l, _ := runner.Logger(config.Config{}, "warn", w)
	return l
}
