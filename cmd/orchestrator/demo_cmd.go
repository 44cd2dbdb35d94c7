package main

import (
	"context"
	"io"
	"strconv"

	"github.com/troupe-ai/troupe/app/demo"
)

// cmdDemo runs a real team offline against a scripted model (app/demo):
// flags → the demo → exit code.
func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	o, err := parseDemoFlags(args)
	if err != nil {
		return exitUsage, err
	}
	completed, err := demo.Run(ctx, o, stdout, stderr)
	if err == nil && !completed {
		return exitFailed, nil
	}
	return codeOf(err)
}

func parseDemoFlags(args []string) (demo.Options, error) {
	fs := flagsOf("demo")
	pos, err := fs.parse(args)
	if err != nil {
		return demo.Options{}, err
	}
	if len(pos) > 0 {
		return demo.Options{}, usageErr("demo [--workspace DIR [--in-place]] [--nodes N] [--keep]")
	}
	o := demo.Options{Workspace: fs.values["workspace"], Keep: fs.bools["keep"], InPlace: fs.bools["in-place"]}
	if v := fs.values["nodes"]; v != "" {
		if o.Nodes, err = strconv.Atoi(v); err != nil || o.Nodes < 0 || o.Nodes > 16 {
			return demo.Options{}, usageErr("--nodes: want a number from 0 to 16, got %q", v)
		}
	}
	return o, nil
}
