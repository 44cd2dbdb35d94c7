package main

import (
	"bytes"
	"strings"
	"testing"
)

// Every command and subcommand answers --help (and help CMD) on stdout with
// its usage, exit 0; an unknown topic is a usage error.
func TestHelpEverywhere(t *testing.T) {
	for topic := range commandHelp {
		if topic == "help" {
			continue // help --help is help itself
		}
		args := append(strings.Fields(topic), "--help")
		var out, errb bytes.Buffer
		if code := run(t.Context(), args, strings.NewReader(""), &out, &errb); code != exitOK {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
		if !strings.HasPrefix(out.String(), "Usage: orchestrator "+strings.Fields(topic)[0]) {
			t.Errorf("%v: stdout %q", args, out.String())
		}
		out.Reset()
		if code := run(t.Context(), append([]string{"help"}, strings.Fields(topic)...), strings.NewReader(""), &out, &errb); code != exitOK || out.String() != commandHelp[topic] {
			t.Errorf("help %s: exit %d, %q", topic, code, out.String())
		}
	}
	// -h works as well, anywhere among the arguments.
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"run", "--workspace", "x", "-h"}, strings.NewReader(""), &out, &errb); code != exitOK || !strings.Contains(out.String(), "--max-rounds") {
		t.Errorf("run -h: exit %d %q", code, out.String())
	}
	out.Reset()
	if code := run(t.Context(), []string{"help", "nope"}, strings.NewReader(""), &out, &errb); code != exitUsage {
		t.Errorf("help nope: exit %d", code)
	}
	// Every command the top-level usage names has help of its own.
	for _, line := range strings.Split(topUsage, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "orchestrator" && !strings.HasPrefix(f[1], "-") && f[1] != "COMMAND" {
			if _, ok := commandHelp[f[1]]; !ok {
				t.Errorf("no help for %q", f[1])
			}
		}
	}
}

func TestVersionLine(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"version"}, strings.NewReader(""), &out, &errb); code != exitOK {
		t.Fatal(code)
	}
	if !strings.HasPrefix(out.String(), "orchestrator ") || !strings.Contains(out.String(), "(commit ") || !strings.Contains(out.String(), " go1.") {
		t.Errorf("version: %q", out.String())
	}
}
