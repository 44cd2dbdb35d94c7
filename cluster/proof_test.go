package cluster

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/budget"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// Results published by anyone but the node that pulled the task (no
// proof, or a proof under another secret) are refused and counted, and the
// task goes on waiting: the real result, which comes later, is the one its
// parent gets.
func TestForgedResultsDoNotReplaceTheRealOne(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(1, false)
	defer srv.Close()
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: "rf",
		Placement: map[string]string{"explore": PlaceRemote}})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	if err := remote.ServeBudget(budgetActor(t, "rf", budget.Limits{Tokens: 1_000_000})); err != nil {
		t.Fatal(err)
	}
	child, err := remote.Placer().Place(t.Context(), actors.ChildTask{V: 1, Run: "rf", ID: "explore-1", Parent: "root",
		Kind: "explore", Task: "q0: where is main?", Model: "small"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan actors.AgentResult, 1)
	go func() { r, _ := child.Start(t.Context()); done <- r }()
	forged, _ := json.Marshal(messages.Result{V: messages.ProtocolVersion, Run: "rf", Agent: "explore-1", Kind: "explore",
		Node: "n1", Status: "completed", Reason: "done", Text: "forged answer"})
	// On the untagged subject of older troupes, and on a subject with a
	// tag under another secret, whose proof is under that secret.
	other := newSecret()
	for i, f := range []struct{ subj, proof string }{
		{"troupe.result.rf.explore-1", ""},
		{bus.ResultSubject(bus.DefaultPrefix, "rf", "explore-1", resultTag(other, 1)), prove(deliveryKey(other, 1, "n1"), forged)},
	} {
		h := nats.Header{jetstream.MsgIDHeader: []string{fmt.Sprintf("forged-%d", i)}}
		if f.proof != "" {
			h.Set(proofHeader, f.proof)
			h.Set(attemptHeader, "1")
			h.Set(nodeHeader, "n1")
		}
		if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: f.subj, Data: forged, Header: h}); err != nil {
			t.Fatal(err)
		}
		checkFor(t, 10*time.Second, func() error {
			if st := remote.Stats(); st.Forged != uint64(i+1) {
				return fmt.Errorf("stats %+v", st)
			}
			return nil
		})
	}
	select {
	case r := <-done:
		t.Fatalf("the task ended on a forged result: %+v", r)
	default:
	}
	startNode(t, s, srv, "n1", 1, nil)
	res := <-done
	if res.Status != actors.StatusCompleted || strings.Contains(res.Text, "forged") || !strings.Contains(res.Text, "main.go:3") {
		t.Fatalf("result %+v", res)
	}
	if st := remote.Stats(); st.Forged != 2 || st.Duplicates != 0 {
		t.Fatalf("stats after the real result: %+v", st)
	}
}

func TestProof(t *testing.T) {
	a, b := newSecret(), newSecret()
	if a == b || len(a) < 40 {
		t.Fatalf("secrets %q %q", a, b)
	}
	data := []byte(`{"v":1}`)
	if !proven(a, data, prove(a, data)) || proven(b, data, prove(a, data)) || proven(a, []byte(`{"v":2}`), prove(a, data)) || proven(a, data, "") {
		t.Fatal("proof checks")
	}
}
