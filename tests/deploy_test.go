package tests

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"gopkg.in/yaml.v3"
)

// The deployment files (deploy/) as the programs read them: docker compose
// and a Kubernetes cluster are not here, so each command is checked
// against the programs' own --help (every flag exists), and the names and
// ports against each other and the code's (the streams, the consumer,
// the monitoring port the probes and KEDA read).
func TestDeployFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the programs")
	}
	help := programHelp(t)
	t.Run("compose", func(t *testing.T) { checkCompose(t, help) })
	t.Run("kubernetes", func(t *testing.T) { checkKubernetes(t, help) })
}

// programHelp is the flags each command's --help names, by command
// ("orchestrator serve", "orchestrator watch", "node").
func programHelp(t *testing.T) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	out := map[string][]string{}
	for _, p := range []string{"orchestrator", "node"} {
		if b, err := exec.Command("go", "build", "-o", filepath.Join(dir, p), "../cmd/"+p).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", p, err, b)
		}
	}
	for _, c := range [][]string{{"orchestrator", "serve"}, {"orchestrator", "watch"}, {"node"}} {
		b, _ := exec.Command(filepath.Join(dir, c[0]), append(c[1:], "--help")...).CombinedOutput()
		flags := regexp.MustCompile(`(?m)^\s+(--[a-z-]+)`).FindAllStringSubmatch(string(b), -1)
		for _, f := range flags {
			out[strings.Join(c, " ")] = append(out[strings.Join(c, " ")], f[1])
		}
		if len(flags) == 0 {
			t.Fatalf("%v --help names no flags:\n%s", c, b)
		}
	}
	return out
}

// command is a parsed command line: the program (and subcommand) and its
// flags' values.
type command struct {
	program string
	flags   map[string]string
}

// parseCommand reads args as the programs take them, checking that each
// flag is one of the program's (help).
func parseCommand(t *testing.T, args []string, help map[string][]string) command {
	t.Helper()
	c := command{program: args[0], flags: map[string]string{}}
	rest := args[1:]
	if c.program == "orchestrator" {
		c.program, rest = "orchestrator "+args[1], args[2:]
	}
	known, ok := help[c.program]
	if !ok {
		t.Fatalf("command %v: no such program", args)
	}
	for i := 0; i < len(rest); i++ {
		f := rest[i]
		if !slices.Contains(known, f) {
			t.Errorf("%s: no flag %s (its --help names %v)", c.program, f, known)
			continue
		}
		if i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "--") {
			c.flags[f] = rest[i+1]
			i++
		} else {
			c.flags[f] = "true"
		}
	}
	return c
}

// port is the port of a host:port or URL.
func port(t *testing.T, addr string) int {
	t.Helper()
	if i := strings.Index(addr, "://"); i >= 0 {
		addr = addr[i+3:]
	}
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// yamlDocs decodes every document of a YAML file.
func yamlDocs(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var d map[string]any
		if err := dec.Decode(&d); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, d)
	}
}

// at walks m along keys (map keys, or list indexes as ints).
func at(m any, keys ...any) any {
	for _, k := range keys {
		switch v := m.(type) {
		case map[string]any:
			m = v[k.(string)]
		case []any:
			m = v[k.(int)]
		default:
			return nil
		}
	}
	return m
}

// strs is a YAML list of strings.
func strs(v any) []string {
	var out []string
	for _, s := range v.([]any) {
		out = append(out, s.(string))
	}
	return out
}

// tasksConsumer is the durable consumer of explore tasks the nodes share.
var tasksConsumer = bus.DefaultPrefix + "_explore_v" + strconv.Itoa(messages.ProtocolVersion)
