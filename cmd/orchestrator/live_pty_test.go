package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
	"github.com/troupe-ai/troupe/internal/ptytest"
	"github.com/troupe-ai/troupe/llm/llmtest"
)

// ansi matches the colour and cursor sequences of the view.
var ansi = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)

// On a terminal, run draws the live agent tree (the watch view) on stderr
// instead of one line per event: in colour, or without with NO_COLOR set;
// the answer still goes to stdout alone.
func TestRunDrawsTheTreeOnATerminal(t *testing.T) {
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		noColor string
	}{{"colour", ""}, {"NO_COLOR", "1"}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ptytest.Open(100, 30)
			if err != nil {
				peer.Missing(t, "pty", "no pseudo-terminals here: %v", err)
			}
			defer p.Close()
			srv := scripted(t,
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Args: json.RawMessage(`{"path":"a.txt"}`)}}},
				llmtest.Turn{Text: "It says alpha."})
			vars := map[string]string{"OPENAI_BASE_URL": srv.URL(), "OPENAI_API_KEY": "sk-test-secret-123", "TERM": "xterm-256color", "NO_COLOR": tc.noColor}
			env := runEnv{getenv: func(k string) string { return vars[k] }, home: t.TempDir(), stdin: strings.NewReader("")}
			var out bytes.Buffer
			code, err := cmdRun(t.Context(), []string{"--workspace", ws, "--model", "m1", "what does a.txt say?"}, env, &out, p.TTY, false)
			if err != nil || code != exitOK {
				t.Fatalf("exit %d %v\n%q", code, err, p.Output())
			}
			if err := p.CloseTTY(); err != nil {
				t.Fatal(err)
			}
			p.Wait()
			drawn := p.Output()
			if out.String() != "It says alpha.\n" {
				t.Errorf("stdout %q", out.String())
			}
			// The tree: the run's header, the root's row and the recent
			// events under them; not the timestamped lines of a pipe.
			plain := ansi.ReplaceAllString(drawn, "")
			for _, re := range []string{`(?m)^run [0-9a-f]{8} · finished · 1 agent · `, `(?m)^  root +root +finished +r2 `, `(?m)^recent:\r$`, `(?m)^  root round 1 called read_file\r$`} {
				if !regexp.MustCompile(re).MatchString(plain) {
					t.Errorf("no live tree on the terminal (%s):\n%q", re, drawn)
				}
			}
			if regexp.MustCompile(`\d\.\d\ds  root round`).MatchString(plain) {
				t.Errorf("the lines of a pipe on a terminal:\n%q", drawn)
			}
			coloured := strings.Contains(drawn, "\x1b[32mfinished") && strings.Contains(drawn, "\x1b[1mrun ")
			anyColour := strings.Contains(drawn, "\x1b[32m") || strings.Contains(drawn, "\x1b[1m") || strings.Contains(drawn, "\x1b[2m")
			switch {
			case tc.noColor == "" && !coloured:
				t.Errorf("no colour on a terminal:\n%q", drawn)
			case tc.noColor != "" && anyColour:
				t.Errorf("colour with NO_COLOR set:\n%q", drawn)
			}
		})
	}
}
