package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/messages"
)

// A node fences a task well before the run may hand it on: three
// quarters of the run's lost timeout (the task's, or two heartbeats), or
// half the AckWait, but never under a heartbeat and a half.
func TestFenceAfter(t *testing.T) {
	for _, c := range []struct {
		beat, ackWait time.Duration
		lostMS        int64
		want          time.Duration
	}{
		{DefaultHeartbeat, DefaultAckWait, 0, 3 * time.Second},            // the defaults
		{DefaultHeartbeat, DefaultAckWait, 8000, 5 * time.Second},         // node.lease_timeout 8s: half the AckWait
		{DefaultHeartbeat, DefaultAckWait, 6000, 4500 * time.Millisecond}, // node.lease_timeout 6s
		{DefaultHeartbeat, 4 * time.Second, 0, 3 * time.Second},           // a short AckWait: a beat and a half at least
		{100 * time.Millisecond, time.Hour, 1000, 750 * time.Millisecond}, // fast beats, a fixed timeout
		{100 * time.Millisecond, time.Hour, 0, 150 * time.Millisecond},    // fast beats
		{DefaultHeartbeat, DefaultAckWait, 1000, 3 * time.Second},         // a timeout under two beats: not under a beat and a half
	} {
		n := &Node{o: NodeOptions{Heartbeat: c.beat, AckWait: c.ackWait}}
		if got := n.fenceAfter(messages.Task{LostMS: c.lostMS}); got != c.want {
			t.Errorf("beat %s, ack wait %s, lost %d ms: fence after %s, want %s", c.beat, c.ackWait, c.lostMS, got, c.want)
		}
	}
}

// A node that was only slow (or cut off) sends its result after the run
// handed its task to another node: the result proves the secret the task
// had before, and is refused; the task goes on waiting for the new
// delivery's result, which ends it.
func TestLateResultOfAReissuedTaskRefused(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	const run, task = "lr", "explore-1"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	late := waitingTask(remote, task, "nA")
	remote.mu.Lock()
	c := remote.waiting[task]
	remote.mu.Unlock()
	c.mu.Lock()
	c.node, c.attempt = "nA", 1
	c.mu.Unlock()
	c.reissue("nA") // nA found lost
	c.mu.Lock()
	fresh := newDelivery(c.secret, task, "nB", c.prior+1)
	c.mu.Unlock()

	result := func(d *delivery, node string, attempt int, text string) {
		publishSignedResult(t, js, run, task, d, node, attempt, text)
	}
	result(late, "nA", 1, "late")
	checkFor(t, 10*time.Second, func() error {
		if remote.Stats().Forged != 1 {
			return fmt.Errorf("stats %+v", remote.Stats())
		}
		return nil
	})
	select {
	case res := <-c.done:
		t.Fatalf("the late result ended the task: %+v", res)
	default:
	}
	result(fresh, "nB", 2, "current")
	select {
	case res := <-c.done:
		if res.Text != "current" {
			t.Errorf("the task ended on %+v", res)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the new delivery's result was not taken")
	}
	if st := remote.Stats(); st.Forged != 1 || st.Reissued != 1 {
		t.Errorf("stats %+v", st)
	}
}
