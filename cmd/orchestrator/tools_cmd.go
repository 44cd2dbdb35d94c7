package main

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

	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/setup"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/tools"
)

func cmdTools(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	if len(args) == 0 {
		return exitUsage, usageErr("tools needs a subcommand: list or call")
	}
	switch args[0] {
	case "list":
		return exitOK, toolsList(stdout)
	case "call":
		return toolsCall(ctx, args[1:], getenv, stdout)
	}
	return exitUsage, usageErr("unknown tools subcommand %q", args[0])
}

func toolsList(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTIER\tACCESS\tDESCRIPTION")
	for _, s := range tools.NewRegistry(tools.All()...).Specs() {
		access := "read-only"
		if !s.ReadOnly {
			access = "mutating"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Tier, access, s.Summary())
	}
	return tw.Flush()
}

// toolSession opens a tool session over dir as an agent would have it,
// with the tools settings of the configuration (defaults, the config
// files, --config, the environment).
func toolSession(dir, configFile string, getenv func(string) string) (*tools.Session, *tools.Executor, error) {
	if dir == "" {
		dir = "."
	}
	ws, err := tools.NewWorkspace(dir)
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	home, _ := os.UserHomeDir()
	cfg, err := config.Load(config.Sources{File: configFile, Home: home, Workspace: ws.Root(), Getenv: getenv})
	if err != nil {
		return nil, nil, usageErr("%v", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, usageErr("config: %v", err)
	}
	tc := setup.ToolsConfig(cfg.Tools)
	tc.DataDir = filepath.Join(ws.Root(), ".troupe")
	s := tools.NewSession("cli", ws, tc)
	_, _ = s.Spill.Sweep(time.Now())
	reg := tools.NewRegistry(tools.All()...)
	return s, &tools.Executor{Tools: reg, Session: s}, nil
}

func toolsCall(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) (int, error) {
	fs := newFlagSet([]string{"workspace", "script", "config"}, []string{"json"})
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if script := fs.values["script"]; script != "" {
		if len(pos) > 0 {
			return exitUsage, usageErr("--script takes no tool name or arguments")
		}
		return toolsScript(ctx, script, fs.values["workspace"], fs.values["config"], getenv, stdout)
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
	s, ex, err := toolSession(fs.values["workspace"], fs.values["config"], getenv)
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
		printText(stdout, res.Text)
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
func toolsScript(ctx context.Context, path, dir, configFile string, getenv func(string) string, stdout io.Writer) (int, error) {
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
	s, ex, err := toolSession(dir, configFile, getenv)
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
		printText(stdout, res.Text)
		if res.IsError {
			code = exitFailed
		}
	}
	return code, nil
}

func printText(w io.Writer, text string) {
	io.WriteString(w, text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		io.WriteString(w, "\n")
	}
}
