package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// buildWireReader builds testdata/wirereader in a module of its own that
// requires nats.go and this repository (replaced by its directory), and
// imports nats.go and messages only. Modules come from the local module
// cache (GOPROXY=off), with this repository's go.sum.
func buildWireReader(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "wirereader", "main.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	natsVersion := ""
	mod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "github.com/nats-io/nats.go" {
			natsVersion = f[1]
		}
	}
	if natsVersion == "" {
		t.Fatal("go.mod does not require nats.go")
	}
	gomod := fmt.Sprintf("module wirereader\n\ngo 1.24\n\nrequire (\n\tgithub.com/nats-io/nats.go %s\n\tgithub.com/troupe-ai/troupe v0.0.0\n)\n\nreplace github.com/troupe-ai/troupe => %s\n",
		natsVersion, root)
	for name, data := range map[string][]byte{"main.go": src, "go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(dir, "wirereader")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local", "GOSUMDB=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the reader: %v\n%s", err, out)
	}
	// The reader's own module imports nats.go and messages, nothing else of
	// this repository.
	list := exec.Command(goBin, "list", "-deps", "-f", "{{.ImportPath}}", ".")
	list.Dir, list.Env = dir, cmd.Env
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/troupe-ai/troupe/") && p != "github.com/troupe-ai/troupe/messages" {
			t.Errorf("the reader depends on %s: messages must stand alone", p)
		}
	}
	return bin
}

// A Go program with nats.go and messages only decodes what a real node
// and orchestrator put on the task queue, the start notices, the results
// and the node registry.
func TestWireReaderNeedsOnlyMessages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	bin := buildWireReader(t)
	s := natsServer(t)
	srv := fanoutScript(0, false)
	defer srv.Close()
	startNode(t, s, srv, "n1", 1, &recorder{})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	reader := exec.CommandContext(ctx, bin, s.ClientURL(), bus.DefaultPrefix, bus.ResultsStream, bus.NodesBucket)
	var stderr bytes.Buffer
	reader.Stderr = &stderr
	stdout, err := reader.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := reader.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "ready" {
		t.Fatalf("reader did not start: %q %s", lines.Text(), stderr.String())
	}

	run := "wire-run"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, connect(t, s)), Run: run,
		Placement: map[string]string{"explore": PlaceRemote}, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	// A node's agent makes no model call without its run's budget answering.
	if err := remote.ServeBudget(budgetActor(t, run, budget.Limits{Tokens: 1_000_000})); err != nil {
		t.Fatal(err)
	}
	child, err := remote.Placer().Place(t.Context(), actors.ChildTask{V: messages.ProtocolVersion, Run: run, ID: "explore-1",
		Parent: "root", Kind: "explore", Task: "q: where is main?", Model: "small"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := child.Start(t.Context())
	if err != nil || res.Status != actors.StatusCompleted {
		t.Fatalf("child: %+v %v", res, err)
	}
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
	}
	if err := reader.Wait(); err != nil {
		t.Fatalf("reader: %v\n%s", err, stderr.String())
	}
	want := []string{"task wire-run explore-1 explore", "started n1 1", "result wire-run explore-1 completed n1", "node n1 [explore] 1"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reader read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
