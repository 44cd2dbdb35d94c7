package main

import (
	"context"
	"encoding/json"
	"io"

	"github.com/troupe-ai/troupe/app/console"
	"github.com/troupe-ai/troupe/app/toolcli"
)

// cmdTools lists the tools or calls them outside a run (app/toolcli).
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

// toolOptions are the options of tools list and call from their flags.
func toolOptions(fs *flagSet, getenv func(string) string, stderr io.Writer) toolcli.Options {
	return toolcli.Options{Workspace: fs.values["workspace"], ConfigFile: fs.values["config"], Getenv: getenv, Stderr: stderr}
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
	if err := toolcli.List(ctx, toolOptions(fs, getenv, stderr), w); err != nil {
		return exitUsage, err
	}
	return exitOK, nil
}

// toolsCall makes one call (NAME 'JSON-ARGS') or runs a --script file.
func toolsCall(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (int, error) {
	fs := flagsOf("tools call")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	o := toolOptions(fs, getenv, stderr)
	if script := fs.values["script"]; script != "" {
		if len(pos) > 0 {
			return exitUsage, usageErr("--script takes no tool name or arguments")
		}
		return toolsScript(ctx, o, script, stdout)
	}
	if len(pos) < 1 || len(pos) > 2 {
		return exitUsage, usageErr("tools call NAME 'JSON-ARGS' [--workspace DIR] [--config FILE] [--json]")
	}
	raw := "{}"
	if len(pos) == 2 {
		raw = pos[1]
	}
	res, err := toolcli.Call(ctx, o, pos[0], json.RawMessage(raw))
	if err != nil {
		return exitUsage, err
	}
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

// toolsScript runs a JSON Lines file of calls, in order, in one session,
// every line checked before anything runs.
func toolsScript(ctx context.Context, o toolcli.Options, path string, stdout io.Writer) (int, error) {
	lines, err := toolcli.ReadScript(path)
	if err != nil {
		return exitUsage, err
	}
	failed, err := toolcli.Script(ctx, o, lines, stdout)
	switch {
	case ctx.Err() != nil:
		return exitInterrupt, ctx.Err()
	case err != nil:
		return exitUsage, err
	case failed:
		return exitFailed, nil
	}
	return exitOK, nil
}
