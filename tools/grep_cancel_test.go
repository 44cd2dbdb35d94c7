//go:build unix

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

type runOutcome struct {
	res Result
	err error
}

// TestGrepCancelMidSearch: a grep whose context is cancelled returns
// context.Canceled, not results (named pipes, which once made an endless
// input for this test, are refused now, so the context ends first).
func TestGrepCancelMidSearch(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for i := 0; i < 200; i++ {
		writeFile(t, s, fmt.Sprintf("d%d/f%d.txt", i%10, i), strings.Repeat("no match on this line\n", 50))
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res, err := Grep().Run(ctx, s, json.RawMessage(`{"pattern": "needle"}`))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled grep returned %+v, %v; want context.Canceled", res, err)
	}
}

// TestGrepCancelBigTree cancels a search of a generated tree right after
// starting it: whether the cancellation lands before the walk or during it,
// the result must be the context's error, for grep and find_files alike.
func TestGrepCancelBigTree(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	line := strings.Repeat("lorem ipsum dolor sit amet ", 4) + "\n"
	body := strings.Repeat(line, 300)
	for i := range 300 {
		writeFile(t, s, fmt.Sprintf("d%02d/e%d/f%03d.txt", i%30, i%7, i), body)
	}
	for _, c := range []struct {
		tool Tool
		args string
	}{
		{Grep(), `{"pattern": "n[eo]edle\\d", "mode": "count"}`},
		{FindFiles(), `{"pattern": "*.nothing"}`},
	} {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan runOutcome, 1)
		go func() {
			res, err := c.tool.Run(ctx, s, json.RawMessage(c.args))
			done <- runOutcome{res, err}
		}()
		cancel()
		select {
		case out := <-done:
			if !errors.Is(out.err, context.Canceled) {
				t.Errorf("%s: cancelled call returned %+v, %v; want context.Canceled", c.tool.Spec().Name, out.res, out.err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not return after its context was cancelled", c.tool.Spec().Name)
		}
	}
}
