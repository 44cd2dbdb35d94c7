package demo

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// demoNodeConfig is the nodes' config: the demo's models and prices.
const demoNodeConfig = `model:
  default: demo-large
  cheap: demo-small
  pricing:
    demo-large: {input: 2.0, cached_input: 0.5, output: 8.0}
    demo-small: {input: 0.1, cached_input: 0.025, output: 0.4}
`

// startDemoNodes starts n node processes (this program's own node
// command) on the demo's NATS server and scripted model, and waits until
// each is ready. stop drains them with SIGTERM.
func startDemoNodes(ctx context.Context, n int, natsURL string, nodeCreds func(name string) (string, error), modelURL, ws string, stderr io.Writer) (stop func(), err error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start nodes: %w", err)
	}
	cfg := filepath.Join(os.TempDir(), fmt.Sprintf("troupe-demo-node-%d.yaml", os.Getpid()))
	if err := os.WriteFile(cfg, []byte(demoNodeConfig), 0o600); err != nil {
		return nil, err
	}
	var cmds []*exec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Signal(syscall.SIGTERM)
		}
		for _, c := range cmds {
			done := make(chan struct{})
			go func() { _ = c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(15 * time.Second):
				_ = c.Process.Kill()
			}
		}
		os.Remove(cfg)
	}
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("demo-node-%d", i)
		creds, err := nodeCreds(name) // each node its own credentials
		if err != nil {
			stop()
			return nil, err
		}
		c := exec.CommandContext(ctx, self, "node", "--nats", natsURL, "--workspace", ws, "--kinds", "explore", "--slots", "2",
			"--name", name, "--config", cfg, "--log-level", "warn")
		c.Env = append(os.Environ(), "OPENAI_BASE_URL="+modelURL, "OPENAI_API_KEY=demo-not-a-key", "TROUPE_NATS_URL=", "TROUPE_NATS_CREDS="+creds)
		pipe, err := c.StderrPipe()
		if err != nil {
			stop()
			return nil, err
		}
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("start node %d: %w", i, err)
		}
		cmds = append(cmds, c)
		ready := make(chan string, 1)
		go func() {
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				if strings.Contains(sc.Text(), " ready:") {
					select {
					case ready <- sc.Text():
					default:
					}
				}
			}
		}()
		select {
		case line := <-ready:
			fmt.Fprintf(stderr, "%s\n", strings.TrimSpace(line))
		case <-time.After(30 * time.Second):
			stop()
			return nil, fmt.Errorf("node %d did not get ready within 30s", i)
		}
	}
	return stop, nil
}
