package bus

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

func question(id string) messages.AskRequest {
	return messages.AskRequest{V: messages.ProtocolVersion, ID: id, Run: "r1", Agent: "root", Kind: "root",
		Tool: "write_file", Question: "allow write_file?"}
}

// A question asked over NATS reaches an answerer, and its answer comes back.
func TestAskAnswered(t *testing.T) {
	_, c := embedded(t)
	ans, err := c.Answer("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Stop()
	go func() {
		for q := range ans.C {
			_ = q.Answer(q.Req.ID == "q-yes", "tester")
		}
	}()
	ap := c.NewApprover(zerolog.Nop())
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if ok, err := ap.Approve(ctx, question("q-yes")); !ok || err != nil {
		t.Errorf("yes: %v %v", ok, err)
	}
	if ok, err := ap.Approve(ctx, question("q-no")); ok || err != nil {
		t.Errorf("no: %v %v", ok, err)
	}
}

// Nobody listening is an immediate error; somebody listening who never
// answers is a no when the question's time is up.
func TestAskUnanswered(t *testing.T) {
	_, c := embedded(t)
	ap := c.NewApprover(zerolog.Nop())
	nctx, ncancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer ncancel()
	if ok, err := ap.Approve(nctx, question("q1")); ok || !errors.Is(err, ErrNobodyAnswering) {
		t.Errorf("nobody: %v %v", ok, err)
	}
	// A watcher that starts while the question waits still answers it.
	go func() {
		a2, err := c.Answer("", zerolog.Nop())
		if err != nil {
			return
		}
		defer a2.Stop()
		q := <-a2.C
		_ = q.Answer(true, "late watcher")
	}()
	lctx, lcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer lcancel()
	if ok, err := ap.Approve(lctx, question("q-late")); !ok || err != nil {
		t.Errorf("late watcher: %v %v", ok, err)
	}
	ans, err := c.Answer("r1", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if ok, err := ap.Approve(ctx, question("q2")); ok || err == nil {
		t.Errorf("silent answerer: %v %v", ok, err)
	}
	select {
	case q := <-ans.C:
		if q.Req.ID != "q2" || q.Req.DeadlineUnixMS == 0 {
			t.Errorf("question %+v", q.Req)
		}
	default:
		t.Error("the answerer never got the question")
	}
}

// Malformed questions (bad JSON, another version, a forged agent on the
// subject, no reply inbox) are counted and dropped.
func TestAskRejectsHostileQuestions(t *testing.T) {
	_, c := embedded(t)
	ans, err := c.Answer("", zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer ans.Stop()
	nc := c.NATS()
	_, _ = nc.Request(AskSubject("troupe", "r1", "root"), []byte("{nope"), 100*time.Millisecond)
	_, _ = nc.Request(AskSubject("troupe", "r1", "root"), []byte(`{"v":9,"id":"a","run":"r1","agent":"root","question":"q"}`), 100*time.Millisecond)
	_, _ = nc.Request(AskSubject("troupe", "r1", "other"), []byte(`{"v":1,"id":"a","run":"r1","agent":"root","question":"q"}`), 100*time.Millisecond)
	_ = nc.Publish(AskSubject("troupe", "r1", "root"), []byte(`{"v":1,"id":"a","run":"r1","agent":"root","question":"q"}`))
	_ = nc.Flush()
	checkFor(t, 5*time.Second, func() error {
		if ans.Rejected() != 4 {
			return errors.New("not yet")
		}
		return nil
	})
	select {
	case q := <-ans.C:
		t.Errorf("a hostile question got through: %+v", q.Req)
	default:
	}
}

// syncBuffer is a log sink safe for the subscription's goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// Answers that are malformed (bad JSON, another version) or answer a
// question never asked are counted, logged at warn with the question's
// subject, and ignored: the proper answer that follows still counts. With
// only bad answers, the question ends unanswered at its deadline.
func TestAskRejectsBadAnswers(t *testing.T) {
	_, c := embedded(t)
	nc := c.NATS()
	sub, err := nc.Subscribe(AskSubject("troupe", "r1", "root"), func(m *nats.Msg) {
		var q messages.AskRequest
		_ = json.Unmarshal(m.Data, &q)
		_ = m.Respond([]byte("{nope"))
		_ = m.Respond([]byte(`{"v":7,"id":"` + q.ID + `","approved":true}`))
		_ = m.Respond([]byte(`{"v":1,"id":"never-asked","approved":true}`))
		if q.ID == "q-good" {
			_ = m.Respond([]byte(`{"v":1,"id":"q-good","approved":true,"answered_by":"tester"}`))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	ap := c.NewApprover(zerolog.New(&logs))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ans, err := ap.Ask(ctx, question("q-good"))
	if err != nil || !ans.Approved || ans.AnsweredBy != "tester" {
		t.Fatalf("the proper answer after three bad ones: %+v %v", ans, err)
	}
	if n := ap.Rejected(); n != 3 {
		t.Errorf("%d answers rejected, want 3", n)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("log lines %q", lines)
	}
	for _, l := range lines {
		if !strings.Contains(l, `"level":"warn"`) || !strings.Contains(l, `"subject":"troupe.ask.r1.root"`) || !strings.Contains(l, `answer rejected`) {
			t.Errorf("log line %s", l)
		}
	}
	if !strings.Contains(logs.String(), "never-asked") || !strings.Contains(logs.String(), "version") {
		t.Errorf("the log does not say why: %s", logs.String())
	}
	short, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	if ok, err := ap.Approve(short, question("q-bad")); ok || err == nil {
		t.Errorf("only bad answers: %v %v", ok, err)
	}
	if n := ap.Rejected(); n != 6 {
		t.Errorf("%d answers rejected, want 6", n)
	}
}
