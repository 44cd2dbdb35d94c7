package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// A local run's live view and metrics come from its emitter in-process,
// not back from NATS: with every event refused by the bus (the server's
// TROUPE_EVENTS captures other subjects), the view still shows each round
// and the summary's metrics are exactly the script's, while the summary
// says the events could not be published.
func TestLocalViewAndMetricsNeedNoBus(t *testing.T) {
	e, c := embeddedServer(t)
	if _, err := c.JetStream().CreateStream(t.Context(), fullEventsStream); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.New(metricsScript())
	t.Cleanup(srv.Close)
	code, out, errs := runCmd(t, t.Context(), testEnv(srv, t.TempDir()), false, "--workspace", metricsWorkspace(t), "--yes",
		"--nats", e.URL(), "measure me")
	if code != exitOK || out != "done\n" {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, out, errs)
	}
	if !regexp.MustCompile(`\nevents: [1-9][0-9]* could not be published`).MatchString(errs) {
		t.Errorf("the bus took the events: the test tests nothing\n%s", errs)
	}
	for _, re := range []string{`(?m)^ *[0-9.]+s  root round 1 called read_file`, `(?m)^ *[0-9.]+s  .*explore`, `(?m)^ *[0-9.]+s  .*worker`} {
		if !regexp.MustCompile(re).MatchString(errs) {
			t.Errorf("the live view lacks %s:\n%s", re, errs)
		}
	}
	for _, w := range []string{"shell calls on file operations  50% (1 of 2 shell calls)", "grep calls in files mode        50% (1 of 2 grep calls)",
		"blind writes                    50% (1 of 2 file writes)", "cache hits                      20% (1 of 5 cacheable calls)",
		"multi-tool rounds in parallel   50% (2 of 4 rounds with 2+ calls)", "tokens by kind                  explore 120 tok · root 30 tok · worker 230 tok",
		"(8 model calls)"} {
		if !strings.Contains(errs, w) {
			t.Errorf("the metrics lack %q:\n%s", w, errs)
		}
	}
}
