package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/app/nodecmd"
)

// Every command and subcommand answers --help, -h and help CMD on stdout
// with its usage, exit 0, and its help names every flag it takes; the
// program itself answers --help, -h and help with the top-level usage,
// which names every command and every flag of the commands it spells out.
func TestHelpEverywhere(t *testing.T) {
	call := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), args, strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"-help"}, {"help"}, {"help", "--help"}, {"help", "-h"}} {
		if code, out, errs := call(args...); code != exitOK || out != topUsage || errs != "" {
			t.Errorf("%v: exit %d, stdout %.40q, stderr %q", args, code, out, errs)
		}
	}
	for topic, h := range commandHelp {
		if topic == "help" {
			continue // help --help is the top-level usage, above
		}
		words := strings.Fields(topic)
		for _, args := range [][]string{append(slices.Clone(words), "--help"), append(slices.Clone(words), "-h"),
			append([]string{"help"}, words...), append(slices.Clone(words), "--json", "-h")} {
			if code, out, errs := call(args...); code != exitOK || out != h || errs != "" {
				t.Errorf("%v: exit %d, stdout %.40q, stderr %q", args, code, out, errs)
			}
		}
		if !strings.HasPrefix(h, "Usage: orchestrator "+words[0]) {
			t.Errorf("help %s starts %.40q", topic, h)
		}
		f := commandFlags[topic]
		for _, name := range append(slices.Clone(f.values), f.bools...) {
			if !strings.Contains(h, "--"+name+" ") && !strings.Contains(h, "--"+name+"\n") && !strings.Contains(h, "--"+name+"]") {
				t.Errorf("help %s does not name --%s", topic, name)
			}
		}
	}
	for topic := range commandFlags {
		if _, ok := commandHelp[topic]; !ok {
			t.Errorf("%s takes flags but has no help", topic)
		}
	}
	// The top-level usage: every command has help, and a command whose
	// lines do not end in [flags] names all of its flags there.
	lines := map[string]string{}
	for _, line := range strings.Split(topUsage, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "orchestrator" || f[1] == "COMMAND" || strings.HasPrefix(f[1], "-") {
			continue
		}
		if _, ok := commandHelp[f[1]]; !ok {
			t.Errorf("no help for %q", f[1])
		}
		topic := f[1]
		if len(f) > 2 {
			if _, ok := commandFlags[f[1]+" "+f[2]]; ok {
				topic = f[1] + " " + f[2]
			}
		}
		lines[topic] += line + "\n"
	}
	for topic, f := range commandFlags {
		l, ok := lines[topic]
		if !ok {
			t.Errorf("the top-level usage leaves out %s", topic)
			continue
		}
		if strings.Contains(l, "[flags]") {
			continue
		}
		for _, name := range append(slices.Clone(f.values), f.bools...) {
			if !strings.Contains(l, "--"+name) {
				t.Errorf("the top-level usage of %s leaves out --%s", topic, name)
			}
		}
	}
	// The node program, built in: help and version --help are its usage.
	for _, args := range [][]string{{"node", "help"}, {"node", "--help"}, {"node", "version", "--help"}} {
		if code, out, errs := call(args...); code != exitOK || !strings.Contains(out, nodecmd.Usage) || errs != "" {
			t.Errorf("%v: exit %d, stdout %.40q, stderr %q", args, code, out, errs)
		}
	}
	if code, _, _ := call("help", "nope"); code != exitUsage {
		t.Errorf("help nope: exit %d", code)
	}
	if code, _, errs := call(); code != exitUsage || errs != topUsage {
		t.Errorf("no arguments: exit %d, stderr %.40q", code, errs)
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

// Every command's help ends its text with examples of that command: an
// "Examples:" section of indented command lines, each of which runs it.
func TestHelpHasExamples(t *testing.T) {
	for topic, h := range commandHelp {
		_, ex, ok := strings.Cut(h, "\nExamples:\n")
		if !ok {
			t.Errorf("help %s has no Examples: section", topic)
			continue
		}
		ex, _, _ = strings.Cut(ex, "\n\n")
		lines := strings.Split(strings.TrimRight(ex, "\n"), "\n")
		for _, l := range lines {
			if !strings.HasPrefix(l, "  ") || !strings.Contains(l, topic) ||
				!strings.Contains(l, "orchestrator ") && !strings.HasPrefix(strings.TrimSpace(l), "node ") && !strings.Contains(l, " node ") {
				t.Errorf("help %s: example %q does not run orchestrator %s", topic, l, topic)
			}
		}
		if len(lines) == 0 || lines[0] == "" {
			t.Errorf("help %s: no examples", topic)
		}
	}
}
