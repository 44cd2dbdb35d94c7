package mcpserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/llm/llmtest"
)

// rawClient speaks JSON-RPC lines to a server's stdio, as a client that
// gets things wrong would.
type rawClient struct {
	t   *testing.T
	in  io.Writer
	out *bufio.Scanner
}

// reply is one line the server wrote.
type reply struct {
	ID     any             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
}

func newRawClient(t *testing.T, s *Server) *rawClient {
	in, out := stdio(t, s)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	c := &rawClient{t: t, in: in, out: sc}
	c.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := c.next(); r.Error != nil || fmt.Sprint(r.ID) != "init" {
		t.Fatalf("initialize: %+v", r)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write %q: %v", line, err)
	}
}

// next is the server's next reply (notifications skipped).
func (c *rawClient) next() reply {
	c.t.Helper()
	for c.out.Scan() {
		var r reply
		if err := json.Unmarshal(c.out.Bytes(), &r); err != nil {
			c.t.Fatalf("the server wrote %q: %v", c.out.Text(), err)
		}
		if r.Method == "" {
			return r
		}
	}
	c.t.Fatalf("the server's output ended: %v", c.out.Err())
	return reply{}
}

// tool is a tools/call request line.
func tool(id int, name, args string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, id, name, args)
}

// Malformed input gets JSON-RPC errors and the server carries on: a line
// that is not JSON (-32700), JSON that is not a request and batches
// (-32600), an unknown method (-32601), and arguments no run could use
// (-32602, naming the argument, before any model call); a run in flight
// when garbage arrives finishes, and the session goes on.
func TestMalformedInput(t *testing.T) {
	srv := llmtest.New(exploreScript(time.Second, 0))
	t.Cleanup(srv.Close)
	c := newRawClient(t, newServer(t, srv, workspace(t, "")))

	c.send(tool(1, "start_run", `{"task":"find alpha for me"}`))
	started := c.next()
	var run RunStatus
	if err := json.Unmarshal(started.Result, &struct {
		Structured *RunStatus `json:"structuredContent"`
	}{&run}); err != nil || run.Status != "running" {
		t.Fatalf("start_run: %+v (%v)", started, err)
	}
	cases := []struct {
		line string
		id   any
		code int
		says string
	}{
		{"this is not json", nil, -32700, "not JSON"},
		{`{"jsonrpc":"2.0","id":3,"method":`, nil, -32700, "not JSON"},
		{`{"jsonrpc":"2.0","id":4}`, 4.0, -32600, "invalid request"},
		{`{"id":5,"method":"tools/list"}`, 5.0, -32600, "version"},
		// A response to nothing asked is not answered (JSON-RPC answers
		// requests only); the next reply is the next case's.
		{`{"jsonrpc":"2.0","id":99,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":5.5}`, 5.5, -32600, "needs a result"},
		{`42`, nil, -32600, "invalid request"},
		{`[]`, nil, -32600, "batches"},
		{`[{"jsonrpc":"2.0","id":6,"method":"tools/list"}]`, nil, -32600, "batches"},
		{`{"jsonrpc":"2.0","id":7,"method":"no/such/method"}`, 7.0, -32601, ""},
		{tool(8, "explore", `{"question":""}`), 8.0, -32602, "question is empty"},
		{tool(9, "explore", `{"question":"where?","agents":-3}`), 9.0, -32602, "agents must be from 1 to 16"},
		{tool(10, "explore", `{"question":"where?","agents":"many"}`), 10.0, -32602, "agents must be a whole number, not string"},
		{tool(11, "explore", `{"question":"where?","agent":2}`), 11.0, -32602, `unknown field "agent"`},
		{tool(12, "start_run", `{"task":"  "}`), 12.0, -32602, "task is empty"},
		{tool(13, "start_run", `{"task":"x","budget_tokens":-1}`), 13.0, -32602, "budget_tokens must be positive"},
		{tool(14, "start_run", `["task"]`), 14.0, -32602, ""},
		{tool(15, "start_run", `{"task":"x","placement":"explore=moon"}`), 15.0, -32602, "placement"},
		{tool(16, "check_run", `{"run":""}`), 16.0, -32602, "run is empty"},
		{tool(17, "check_run", `{}`), 17.0, -32602, "run is empty"},
	}
	for _, tc := range cases {
		c.send(tc.line)
		r := c.next()
		if r.Error == nil || r.Error.Code != tc.code || fmt.Sprint(r.ID) != fmt.Sprint(tc.id) || !strings.Contains(r.Error.Message, tc.says) {
			t.Errorf("%s: answered id %v %+v, want id %v code %d saying %q", tc.line, r.ID, r.Error, tc.id, tc.code, tc.says)
		}
	}
	c.send(`{"jsonrpc":"2.0","id":20,"method":"tools/list"}`)
	if r := c.next(); r.Error != nil || !strings.Contains(string(r.Result), "start_run") {
		t.Errorf("tools/list after the garbage: %+v", r)
	}
	c.send(tool(21, "check_run", fmt.Sprintf(`{"run":%q,"wait":true}`, run.Run)))
	r := c.next()
	if r.Error != nil || !strings.Contains(string(r.Result), `"status":"completed"`) {
		t.Errorf("the run in flight during the garbage: %s %+v", r.Result, r.Error)
	}
	// Only the one good run called the model.
	if runs := runsOf(srv); len(runs) != 1 || runs[run.Run] == 0 {
		t.Errorf("model requests by run %v, want only run %s's", runs, run.Run)
	}
}

// Arguments are checked before a run starts: FuzzArgs never sees a
// decode panic, and a check that passes leaves arguments a run can use.
func FuzzArgs(f *testing.F) {
	for _, s := range []string{`{"question":"x","agents":3}`, `{"task":"t","budget_tokens":5}`, `{"run":"r","wait":true}`, `null`, `[]`, `{"agents":1e99}`, `{"question":"\u0000"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if a, err := decodeArgs[ExploreArgs](json.RawMessage(raw)); err == nil && a.check() == nil {
			if strings.TrimSpace(a.Question) == "" || a.Agents < 1 || a.Agents > maxAgents {
				t.Errorf("explore %q passed as %+v", raw, a)
			}
		}
		if a, err := decodeArgs[RunArgs](json.RawMessage(raw)); err == nil && a.check() == nil {
			if strings.TrimSpace(a.Task) == "" || a.BudgetTokens < 0 {
				t.Errorf("start_run %q passed as %+v", raw, a)
			}
		}
		if line, tooLong := []byte(raw), false; len(line) > 0 {
			_, _ = check(line, tooLong)
		}
	})
}
