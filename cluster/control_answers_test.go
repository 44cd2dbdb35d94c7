package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/troupe-ai/troupe/bus"
)

// Any user of the server can have it publish a JetStream answer (a JSON
// document of the server's) on any subject, by naming that subject as the
// reply of an API request; NATS permissions cannot restrict a reply
// subject. On a node's cancel subjects such an answer cancels nothing; a
// requester's cancel sent after it is still taken.
func TestServerAnswersOnCancelSubjectsCancelNothing(t *testing.T) {
	s := natsServer(t)
	srv := fanoutScript(0, false)
	defer srv.Close()
	n := startNode(t, s, srv, "n1", 1, &recorder{})
	defer n.Drain(t.Context())
	nc := connect(t, s)
	for _, subj := range []string{bus.CtlSubject(DefaultPrefix, "rr", "", ctlCancel), bus.CtlSubject(DefaultPrefix, "rr", "explore-1", ctlCancel)} {
		for _, api := range []string{"$JS.API.INFO", "$JS.API.STREAM.INFO." + bus.TasksStream, "$JS.API.STREAM.NAMES"} {
			if err := nc.PublishRequest(api, subj, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// The requester's cancels, on the same two subscriptions, after them.
	for _, subj := range []string{bus.CtlSubject(DefaultPrefix, "rr2", "", ctlCancel), bus.CtlSubject(DefaultPrefix, "rr3", "explore-1", ctlCancel)} {
		if err := nc.Publish(subj, []byte(`{"v":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 10*time.Second, func() error {
		if !n.gone.has("rr2", "") || !n.gone.has("rr3", "explore-1") {
			return fmt.Errorf("the requester's cancels were not taken")
		}
		return nil
	})
	if n.gone.has("rr", "") || n.gone.has("rr", "explore-1") {
		t.Error("a JetStream answer published on a cancel subject cancelled the run or its agent")
	}
}
