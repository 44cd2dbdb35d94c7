package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/troupe-ai/troupe/internal/config"
)

// cmdConfig prints the effective configuration with the origin of every
// value: the compiled-in default, a file, the environment or a flag.
func cmdConfig(args []string, getenv func(string) string, stdout io.Writer) (int, error) {
	if len(args) == 0 || args[0] != "print" {
		return exitUsage, usageErr("config needs a subcommand: print")
	}
	fs := flagsOf("config print")
	pos, err := fs.parse(args[1:])
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("config print takes no arguments")
	}
	ws := fs.values["workspace"]
	if ws == "" {
		ws = "."
	}
	home, _ := os.UserHomeDir()
	flags := map[string]string{}
	if fs.values["model"] != "" {
		flags["model.default"] = "--model"
	}
	if fs.values["nats"] != "" {
		flags["nats.url"] = "--nats"
	}
	_, settings, err := config.Effective(config.Sources{File: fs.values["config"], Home: home, Workspace: absOr(ws), Getenv: getenv}, flags)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	for i, s := range settings {
		switch {
		case s.Key == "model.default" && fs.values["model"] != "":
			settings[i].Value = fs.values["model"]
		case s.Key == "nats.url" && fs.values["nats"] != "":
			settings[i].Value = fs.values["nats"]
		}
	}
	if fs.bools["json"] {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return exitOK, enc.Encode(settings)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, s := range settings {
		fmt.Fprintf(tw, "%s: %s\t# %s\n", s.Key, s.Value, s.Origin)
	}
	return exitOK, tw.Flush()
}
