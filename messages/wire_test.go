package messages

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// wireSamples is one filled value of every wire message.
func wireSamples() []any {
	return []any{
		&Task{V: ProtocolVersion, Run: "r1", ID: "explore-1a2b", Parent: "root", Kind: "explore", Task: "where is main?",
			Context: "the repo is Go", Model: "small", ModelOverride: "x", ParentModel: "big", Depth: 1, Background: true,
			Tools: []string{"grep", "read_file"}, LeaseTokens: 200_000, Attempt: 2, Origin: "host/42", Prior: 1, RunLeaseMS: 10000,
			Limits: &TaskLimits{MaxRounds: 20, PlanningRounds: 3, ToolTimeoutMS: 30_000, ResultCap: 2000,
				Truncation: map[string]TaskTruncation{"shell": {Strategy: TruncateHeadTail, MaxBytes: 8000, TailRatio: 0.5}}},
			Budget:    &TaskBudget{Estimates: map[string]int64{"root": 2000, "explore": 300}, TopUp: 500},
			Workspace: "git:4b825dc642cb6eb9a060e54bf8d69288fbee4904"},
		&Result{V: ProtocolVersion, Run: "r1", Agent: "explore-1a2b", Kind: "explore", Node: "n1", Attempt: 2, Status: "completed",
			Reason: "finished", Text: "main.go:3", Plan: json.RawMessage(`{"summary":"s"}`), Error: &Error{Code: CodeInternal, Message: "m"},
			Rounds: 2, TokensIn: 10, TokensOut: 5, Cached: 1, CostUSD: 0.5, ToolCalls: 3, Model: "small", Changed: []string{"a.go"},
			Nested: []NestedChanges{{Agent: "worker-9c8d", Status: "conflict", Files: []string{"a.go", "b.go"}, Conflicts: []string{"a.go"},
				Patch: []byte("diff --git a/a.go b/a.go\n")}, {Agent: "worker-7e6f", Status: "patch", Files: []string{"c.go"}, PatchRef: "r1/lead-1-1-worker-7e6f.patch"}}},
		&Status{Agent: "w1", Kind: "worker", Round: 3, Phase: "executing", TokensIn: 1, TokensOut: 2, CostUSD: 0.1, CurrentTool: "shell", Model: "m", Ended: true},
		&Cancel{V: ProtocolVersion, Reason: "claim revoked", Node: "n1", Attempt: 2},
		&Steer{V: ProtocolVersion, Message: "also check the tests"},
		&SteerReply{Accepted: true},
		&BudgetAcquireRequest{V: ProtocolVersion, Agent: "e1", Parent: "root", Kind: "explore", Estimate: 100, EstimateUSD: 0.1, DeadlineUnixMS: 99},
		&BudgetAcquireReply{V: ProtocolVersion, Grant: &BudgetGrant{Agent: "e1", Parent: "root", Kind: "explore", Tokens: 100, USD: 0.1, Ticket: 2, Order: 2, WaitedMS: 5}},
		&BudgetReport{V: ProtocolVersion, Agent: "e1", Tokens: 10, CostUSD: 0.01, ToolCalls: 2, TopUp: 50},
		&BudgetReportReply{V: ProtocolVersion, State: BudgetStateOK, Remaining: 90, Used: 10, Granted: 100, Lent: 0, ToppedUp: 0},
		&BudgetRelease{V: ProtocolVersion, Agent: "e1", Used: 12},
		&BudgetReleaseReply{V: ProtocolVersion, Agent: "e1", Used: BudgetUsage{Tokens: 12}, Returned: 88},
		&BudgetSnapshotRequest{V: ProtocolVersion},
		&RateLeaseRequest{V: ProtocolVersion, Key: RateKey{Host: "api.openai.com", Account: "9f2c41d07a3be815", Model: "gpt-4.1-mini"},
			Client: "node-3c9a1f02", Limits: RateLimits{RPM: 500}, Learned: RateLimits{RPM: 500, TPM: 200_000},
			Demand: []RateDemand{{Run: "r1", Priority: 2, Waiting: 3, Depth: 1, NeedTokens: 5200, Starved: true}}},
		&RateLeaseReply{V: ProtocolVersion, Shares: []RateShare{{Run: "r1", RPS: 2.3, TPS: 920, Burst: 1, BurstTokens: 5200}},
			Limits: RateLimits{RPM: 500, TPM: 200_000}, TTLMS: 1000, FrozenMS: 1200},
		&RateReport{V: ProtocolVersion, Key: RateKey{Host: "api.openai.com", Account: "9f2c41d07a3be815", Model: "gpt-4.1-mini"},
			Client: "run-77e0b2c4", Status: 429, RetryAfterMS: 3000, Learned: RateLimits{RPM: 500}},
		&RateFrozen{V: ProtocolVersion, Key: RateKey{Host: "api.openai.com", Account: "9f2c41d07a3be815", Model: "gpt-4.1-mini"}, ForMS: 3000, Status: 429},
		&BudgetSnapshotReply{V: ProtocolVersion, Snapshot: &BudgetSnapshot{V: 1, Run: "r1", Limits: BudgetLimits{Tokens: 100}}},
		&AskRequest{V: ProtocolVersion, ID: "q-1", Run: "r1", Agent: "worker-1", Kind: "worker", Tool: "shell",
			Args: json.RawMessage(`{"command":"go test ./..."}`), Question: "run go test?", Choices: []string{"yes", "no"}, DeadlineUnixMS: 1700000000000},
		&AskAnswer{V: ProtocolVersion, ID: "q-1", Approved: true, Text: "yes", AnsweredBy: "watch"},
		&NodeInfo{ID: "node-1a2b3c4d", Name: "box-2", Host: "box-2.lan", Kinds: []string{"explore"}, Slots: 4, Free: 3,
			Version: "1.2.0", Protocol: ProtocolVersion, Workspace: "git:4b825dc6", Started: time.Unix(1700000000, 0).UTC(),
			Heartbeat: time.Unix(1700000002, 0).UTC(), Draining: true, BeatMS: 2000},
		&RunLease{Run: "r1", Origin: "host/42", LeaseMS: 10000, Heartbeat: time.Unix(1700000002, 0).UTC()},
		&StartNotice{Node: "node-1a2b3c4d", Name: "box-2", Attempt: 2, Refused: "another repository"},
		&StartReply{V: ProtocolVersion, Mine: false, Why: "the task was queued again since this delivery"},
		&ErrorReply{V: ProtocolVersion, Error: &Error{Code: CodeBadRequest, Message: "no reply subject"}},
		&TaskSnapshot{Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40), Base: strings.Repeat("c", 40),
			Prefix: "svc/", Bundle: "r1/snap-" + strings.Repeat("a", 40) + ".bundle", BundleSHA256: strings.Repeat("e", 64)},
		&SnapshotRequest{V: ProtocolVersion, Commit: strings.Repeat("a", 40)},
		&SnapshotReply{V: ProtocolVersion, Bundle: "r1/full-" + strings.Repeat("a", 40) + ".bundle", BundleSHA256: strings.Repeat("d", 64)},
		&EventBatchReply{V: ProtocolVersion, Accepted: 1, Refused: 1},
	}
}

type validator interface{ Validate() error }

// Every wire message survives a JSON round trip unchanged and validates.
func TestWireRoundTrip(t *testing.T) {
	for _, v := range wireSamples() {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back := reflect.New(reflect.TypeOf(v).Elem()).Interface()
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatalf("%T: %v", v, err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Errorf("%T changed in a round trip:\n%+v\n%+v", v, v, back)
		}
		if err := back.(validator).Validate(); err != nil {
			t.Errorf("%T: %v", v, err)
		}
	}
}

// Bad messages get errors that say what is wrong; another version is
// ErrVersion.
func TestWireValidate(t *testing.T) {
	if _, err := Decode[Task]([]byte(`{"v":2,"run":"r","agent":"a","parent":"p","kind":"k","task":"t"}`), 1<<20); !errors.Is(err, ErrVersion) {
		t.Errorf("version: %v", err)
	}
	for _, s := range []string{`{"v":1,"run":"r.x","agent":"a","parent":"p","kind":"k","task":"t"}`, `{"v":1,"run":"r","agent":"a","parent":"p","kind":"k","task":" "}`,
		`{"v":1}`, `[1]`, `{"v":1,"run":"r","agent":"a","parent":"p","kind":"k","task":"t","lease_tokens":-1}`,
		`{"v":1,"run":"r","agent":"a","parent":"p","kind":"k","task":"t","limits":{"max_rounds":-1}}`,
		`{"v":1,"run":"r","agent":"a","parent":"p","kind":"k","task":"t","limits":{"truncation":{"shell":{"strategy":"middle"}}}}`,
		`{"v":1,"run":"r","agent":"a","parent":"p","kind":"k","task":"t","limits":{"truncation":{"shell":{"strategy":"head","tail_ratio":2}}}}`} {
		if _, err := Decode[Task]([]byte(s), 1<<20); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: %v", s, err)
		}
	}
	if _, err := Decode[Result]([]byte(`{"v":1,"run":"r","agent":"a","status":"weird"}`), 1<<20); !errors.Is(err, ErrBadMessage) {
		t.Errorf("bad status: %v", err)
	}
	if _, err := Decode[Steer]([]byte(`{"v":1,"message":""}`), 1<<20); !errors.Is(err, ErrBadMessage) {
		t.Errorf("empty steer: %v", err)
	}
	if _, err := Decode[BudgetAcquireRequest]([]byte(`{"v":1,"agent":"a","estimate":0}`), 1<<20); !errors.Is(err, ErrBadMessage) {
		t.Errorf("zero estimate: %v", err)
	}
	if _, err := Decode[Cancel]([]byte(`{"v":1,"reason":"`+string(make([]byte, 100))+`"}`), 50); !errors.Is(err, ErrBadMessage) {
		t.Errorf("oversize: %v", err)
	}
	if _, err := Decode[Cancel]([]byte(`{"v":1,"reason":"r","node":"n1","attempt":-1}`), 1<<20); !errors.Is(err, ErrBadMessage) {
		t.Errorf("negative attempt: %v", err)
	}
	if _, err := Decode[AskRequest]([]byte(`{"v":1,"id":"q","run":"r","agent":"a","question":" "}`), 1<<20); !errors.Is(err, ErrBadMessage) {
		t.Errorf("empty question: %v", err)
	}
	if _, err := Decode[AskAnswer]([]byte(`{"v":2,"id":"q"}`), 1<<20); !errors.Is(err, ErrVersion) {
		t.Errorf("answer version: %v", err)
	}
}

// IDs with control characters (an escape sequence for the terminal that
// shows them), bidirectional controls or invalid UTF-8 are malformed, in
// every wire message and in the event envelope.
func TestIDsRefuseControlCharacters(t *testing.T) {
	for _, id := range []string{"a\x1b[2Jb", "a\x1b]0;pwned\x07", "a\x00", "a\u009b31m", "a\u202eb", "a\tb", "a\x7f", "a\xffb"} {
		task := Task{V: 1, Run: "r", ID: id, Parent: "p", Kind: "k", Task: "t"}
		if err := task.Validate(); !errors.Is(err, ErrBadMessage) {
			t.Errorf("task agent %q: %v", id, err)
		}
		ask := AskRequest{V: 1, ID: "q", Run: id, Agent: "a", Question: "?"}
		if err := ask.Validate(); !errors.Is(err, ErrBadMessage) {
			t.Errorf("ask run %q: %v", id, err)
		}
		acq := BudgetAcquireRequest{V: 1, Agent: "a", Node: id, Kind: "k", Estimate: 1}
		if err := acq.Validate(); !errors.Is(err, ErrBadMessage) {
			t.Errorf("acquire node %q: %v", id, err)
		}
		res := Result{V: 1, Run: "r", Agent: "a", Node: id, Status: "completed"}
		if err := res.Validate(); !errors.Is(err, ErrBadMessage) {
			t.Errorf("result node %q: %v", id, err)
		}
		for _, field := range []string{"run", "agent", "parent", "node", "kind"} {
			ev := Event{V: 1, ID: "i", Run: "r", Agent: "a", Seq: 1, Type: EvtAgentStarted}
			*map[string]*string{"run": &ev.Run, "agent": &ev.Agent, "parent": &ev.Parent, "node": &ev.Node, "kind": &ev.Kind}[field] = id
			if err := ev.Validate(); err == nil {
				t.Errorf("event with %s %q accepted", field, id)
			}
		}
	}
	// From the wire: an escaped ESC in the JSON is still an ESC.
	if _, err := Decode[Task]([]byte(`{"v":1,"run":"r","agent":"a\u001b[31m","parent":"p","kind":"k","task":"t"}`), 1<<20); !errors.Is(err, ErrBadMessage) {
		t.Errorf("escaped ESC in an agent ID: %v", err)
	}
	if err := (&Task{V: 1, Run: "r", ID: "explore-日本", Parent: "p", Kind: "k", Task: "t"}).Validate(); err != nil {
		t.Errorf("a UTF-8 ID is fine: %v", err)
	}
}

// FuzzWire: arbitrary bytes decode into every wire message (and into an
// event and its payload) or fail with an error; nothing panics, and what
// decodes validates again after a round trip.
func FuzzWire(f *testing.F) {
	for _, v := range wireSamples() {
		b, _ := json.Marshal(v)
		f.Add(b)
	}
	f.Add([]byte(`{"v":1,"type":"tool.finished","data":{"tool":7}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		check := func(name string, v any, err error) {
			if err != nil {
				return
			}
			out, err := json.Marshal(v)
			if err != nil {
				t.Fatalf("%s re-encodes with an error: %v", name, err)
			}
			back := reflect.New(reflect.TypeOf(v)).Interface()
			if err := json.Unmarshal(out, back); err != nil || back.(validator).Validate() != nil {
				t.Fatalf("%s does not survive a round trip: %v", name, err)
			}
		}
		v1, e1 := Decode[Task](b, 1<<20)
		check("task", v1, e1)
		v2, e2 := Decode[Result](b, 1<<20)
		check("result", v2, e2)
		v3, e3 := Decode[Status](b, 1<<20)
		check("status", v3, e3)
		v4, e4 := Decode[Cancel](b, 1<<20)
		check("cancel", v4, e4)
		v5, e5 := Decode[Steer](b, 1<<20)
		check("steer", v5, e5)
		v6, e6 := Decode[BudgetAcquireRequest](b, 1<<20)
		check("acquire", v6, e6)
		v7, e7 := Decode[BudgetAcquireReply](b, 1<<20)
		check("acquire reply", v7, e7)
		v8, e8 := Decode[BudgetReport](b, 1<<20)
		check("report", v8, e8)
		v9, e9 := Decode[BudgetRelease](b, 1<<20)
		check("release", v9, e9)
		v10, e10 := Decode[BudgetSnapshotReply](b, 1<<20)
		check("snapshot reply", v10, e10)
		v11, e11 := Decode[SteerReply](b, 1<<20)
		check("steer reply", v11, e11)
		v12, e12 := Decode[BudgetReportReply](b, 1<<20)
		check("report reply", v12, e12)
		v13, e13 := Decode[BudgetReleaseReply](b, 1<<20)
		check("release reply", v13, e13)
		v14, e14 := Decode[BudgetSnapshotRequest](b, 1<<20)
		check("snapshot request", v14, e14)
		v15, e15 := Decode[AskRequest](b, 1<<20)
		check("ask", v15, e15)
		v16, e16 := Decode[AskAnswer](b, 1<<20)
		check("answer", v16, e16)
		var ev Event
		if json.Unmarshal(b, &ev) == nil {
			_, _ = ev.Decode()
		}
	})
}

// A task from an older orchestrator, without limits or workspace, still
// decodes (adding fields is compatible), and the golden task of this
// version reads back field for field.
func TestTaskCompatible(t *testing.T) {
	old := `{"v":1,"run":"r1","agent":"explore-1","parent":"root","kind":"explore","task":"where is main?","model":"small","depth":1,"tools":["grep"],"lease_tokens":100}`
	task, err := Decode[Task]([]byte(old), 1<<20)
	if err != nil || task.Limits != nil || task.Workspace != "" || task.LeaseTokens != 100 {
		t.Fatalf("old task: %+v %v", task, err)
	}
	want := wireSamples()[0].(*Task)
	if *update {
		b, _ := json.MarshalIndent(want, "", "  ")
		if err := os.WriteFile(filepath.Join("testdata", "wire", "task.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "wire", "task.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[Task](golden, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Errorf("golden task:\n%+v\nwant\n%+v", got, want)
	}
}
