package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/troupe-ai/troupe/app/console"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
	"github.com/troupe-ai/troupe/tools/builtin"
)

func cmdTools(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, usageErr("tools needs a subcommand: list or call")
	}
	switch args[0] {
	case "list":
		return toolsList(ctx, args[1:], getenv, stdout, stderr)
	case "call":
		return toolsCall(ctx, args[1:], getenv, stdout, stderr)
	}
	return exitUsage, usageErr("unknown tools subcommand %q", args[0])
}

// toolsList lists the built-in tools and the configured MCP servers'
// (which it starts), with the tier each is given.
func toolsList(ctx context.Context, args []string, getenv func(string) string, w, stderr io.Writer) (int, error) {
	fs := flagsOf("tools list")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("tools list takes no arguments")
	}
	ts, err := openToolset(ctx, getenv, wsOr(fs.values["workspace"]), fs.values["config"], func(string) bool { return true }, true, stderr)
	if err != nil {
		return exitUsage, err
	}
	defer ts.close()
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
		return exitFailed, err
	}
	// The effective sandbox of the commands shell and the MCP servers
	// start, as config print and sandbox check show it.
	fmt.Fprintln(w)
	fmt.Fprint(w, setup.SandboxSummary(ts.sandbox, runner.Abs(wsOr(fs.values["workspace"])), []string{cliKind}))
	return exitOK, nil
}

func wsOr(dir string) string {
	if dir == "" {
		return "."
	}
	return dir
}

// toolSession opens a tool session over dir as an agent would have it,
// with the tools of ts: configured secrets (the API key, NATS
// credentials) are redacted from results and spill files, and commands
// start in the config's sandbox, as in a run.
func toolSession(dir string, ts *toolset) (*tools.Session, *tools.Executor, error) {
	ws, err := tools.NewWorkspace(wsOr(dir))
	if err != nil {
		return nil, nil, usageErr("%v", err)
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

func toolsCall(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	fs := flagsOf("tools call")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if script := fs.values["script"]; script != "" {
		if len(pos) > 0 {
			return exitUsage, usageErr("--script takes no tool name or arguments")
		}
		return toolsScript(ctx, script, fs.values["workspace"], fs.values["config"], getenv, stdout, stderr)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return exitUsage, usageErr("tools call NAME 'JSON-ARGS' [--workspace DIR] [--config FILE] [--json]")
	}
	raw := "{}"
	if len(pos) == 2 {
		raw = pos[1]
	}
	if !json.Valid([]byte(raw)) {
		return exitUsage, usageErr("JSON-ARGS is not valid JSON: %s", raw)
	}
	ts, err := openToolset(ctx, getenv, wsOr(fs.values["workspace"]), fs.values["config"], serversFor(pos[0]), false, stderr)
	if err != nil {
		return exitUsage, err
	}
	defer ts.close()
	s, ex, err := toolSession(fs.values["workspace"], ts)
	if err != nil {
		return exitUsage, err
	}
	defer s.Close() // a background job or session lives as long as the call
	res := ex.Run(ctx, []messages.ToolCall{{ID: "cli-1", Name: pos[0], Args: json.RawMessage(raw)}})[0]
	if fs.bools["json"] {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return exitFailed, err
		}
	} else {
		console.PrintText(stdout, res.Text)
	}
	if res.IsError {
		return exitFailed, nil
	}
	return exitOK, nil
}

// scriptLine is one line of a --script file.
type scriptLine struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// toolsScript runs a JSON Lines file of calls, in order, in one session.
// Every line is checked before anything runs, so a typo on line 9 does not
// leave lines 1-8 applied.
func toolsScript(ctx context.Context, path, dir, cfgFile string, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return exitUsage, usageErr("read script: %v", err)
	}
	var lines []scriptLine
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for n := 1; sc.Scan(); n++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		var l scriptLine
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return exitUsage, usageErr("%s:%d: %v", path, n, err)
		}
		if l.Name == "" {
			return exitUsage, usageErr(`%s:%d: missing "name"`, path, n)
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return exitUsage, usageErr("read script: %v", err)
	}
	var names []string
	for _, l := range lines {
		names = append(names, l.Name)
	}
	ts, err := openToolset(ctx, getenv, wsOr(dir), cfgFile, serversFor(names...), false, stderr)
	if err != nil {
		return exitUsage, err
	}
	defer ts.close()
	s, ex, err := toolSession(dir, ts)
	if err != nil {
		return exitUsage, err
	}
	defer s.Close() // sessions and background jobs end with the script
	code := exitOK
	for i, l := range lines {
		if err := ctx.Err(); err != nil {
			return exitInterrupt, err
		}
		s.SetRound(i + 1)
		res := ex.Run(ctx, []messages.ToolCall{{ID: fmt.Sprintf("script-%d", i+1), Name: l.Name, Args: l.Args}})[0]
		fmt.Fprintf(stdout, "=== %d %s\n", i+1, l.Name)
		console.PrintText(stdout, res.Text)
		if res.IsError {
			code = exitFailed
		}
	}
	return code, nil
}
