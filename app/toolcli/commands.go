package toolcli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/console"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
)

// Options are what every tools subcommand takes.
type Options struct {
	Workspace  string // "" for the current directory
	ConfigFile string // --config, over the usual files
	Getenv     func(string) string
	Stderr     io.Writer // warnings: a server that cannot start, what the kernel does not enforce
}

func (o Options) workspace() string {
	if o.Workspace == "" {
		return "."
	}
	return o.Workspace
}

// List writes the built-in tools and the configured MCP servers' (which
// it starts) with the tier each is given, then the commands' sandbox.
// Errors before anything is listed are the caller's (runner.ErrUsage).
func List(ctx context.Context, o Options, w io.Writer) error {
	ts, err := openToolset(ctx, o.Getenv, o.workspace(), o.ConfigFile, nil, true, o.Stderr)
	if err != nil {
		return err
	}
	defer ts.Close()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTIER\tACCESS\tDESCRIPTION")
	for _, s := range ts.reg.Specs() {
		access := "read-only"
		switch {
		case s.Spawns != nil: // as read-only or mutating as the kind it starts
			access = "spawns"
		case s.Mutates():
			access = "mutating"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, ts.tiers.TierOf(s), access, s.Summary())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The effective sandbox of the commands shell and the MCP servers
	// start, as config print and sandbox check show it.
	fmt.Fprintln(w)
	fmt.Fprint(w, setup.SandboxSummary(ts.sandbox, runner.Abs(o.workspace()), []string{cliKind}))
	return nil
}

// session opens a tool session over the workspace as an agent would have
// it, with the tools of ts: configured secrets (the API key, NATS
// credentials) are redacted from results and spill files, and commands
// start in the config's sandbox, as in a run.
func (o Options) session(ts *toolset) (*tools.Session, *tools.Executor, error) {
	ws, err := tools.NewWorkspace(o.workspace())
	if err != nil {
		return nil, nil, runner.Usage("%v", err)
	}
	tc := setup.ToolsConfig(ts.cfg.Tools)
	tc.DataDir = filepath.Join(ws.Root(), ".troupe")
	if tc.StateDir, err = actors.StateDir(ws.Root()); err != nil {
		return nil, nil, err
	}
	s := tools.NewSession("cli", ws, tc.Config)
	builtin.Prepare(s, tc, builtin.Shared{Sandbox: ts.box(ws.Root())})
	s.Redact = setup.Redactor(ts.cfg).String
	_, _ = s.Spill.Sweep(time.Now())
	return s, &tools.Executor{Tools: ts.reg, Session: s}, nil
}

// Call makes one call of the tool name with the JSON arguments args, in a
// session of its own that ends with the call (its background jobs too).
func Call(ctx context.Context, o Options, name string, args json.RawMessage) (tools.Result, error) {
	if !json.Valid(args) {
		return tools.Result{}, runner.Usage("JSON-ARGS is not valid JSON: %s", args)
	}
	ts, err := openToolset(ctx, o.Getenv, o.workspace(), o.ConfigFile, []string{name}, false, o.Stderr)
	if err != nil {
		return tools.Result{}, err
	}
	defer ts.Close()
	s, ex, err := o.session(ts)
	if err != nil {
		return tools.Result{}, err
	}
	defer s.Close() // a background job or session lives as long as the call
	return ex.Run(ctx, []messages.ToolCall{{ID: "cli-1", Name: name, Args: args}})[0], nil
}

// ScriptLine is one line of a --script file.
type ScriptLine struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// ReadScript reads a JSON Lines file of calls (blank lines and # comments
// aside), every line checked: a typo on line 9 is found before line 1 runs.
func ReadScript(path string) ([]ScriptLine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, runner.Usage("read script: %v", err)
	}
	var lines []ScriptLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var l ScriptLine
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, runner.Usage("%s:%d: %v", path, n, err)
		}
		if l.Name == "" {
			return nil, runner.Usage(`%s:%d: missing "name"`, path, n)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, runner.Usage("read script: %v", err)
	}
	return lines, nil
}

// Script runs lines in order in one session, writing each result under a
// "=== N name" line; failed says whether any call returned an error.
func Script(ctx context.Context, o Options, lines []ScriptLine, w io.Writer) (failed bool, err error) {
	var names []string
	for _, l := range lines {
		names = append(names, l.Name)
	}
	ts, err := openToolset(ctx, o.Getenv, o.workspace(), o.ConfigFile, names, false, o.Stderr)
	if err != nil {
		return false, err
	}
	defer ts.Close()
	s, ex, err := o.session(ts)
	if err != nil {
		return false, err
	}
	defer s.Close() // sessions and background jobs end with the script
	for i, l := range lines {
		if err := ctx.Err(); err != nil {
			return failed, err
		}
		s.SetRound(i + 1)
		res := ex.Run(ctx, []messages.ToolCall{{ID: fmt.Sprintf("script-%d", i+1), Name: l.Name, Args: l.Args}})[0]
		fmt.Fprintf(w, "=== %d %s\n", i+1, l.Name)
		console.PrintText(w, res.Text)
		failed = failed || res.IsError
	}
	return failed, nil
}
