package cluster

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
)

// A result from the node that holds the task's delivery whose nested
// changesets are hostile (an agent ID that climbs out of the changes
// directory, a list over the bound) is taken, with its text and its own
// changeset, and those nested changesets refused with an error saying
// why; a well-formed one next to a hostile one is kept.
func TestHostileNestedChangesAreRefusedAlone(t *testing.T) {
	s := natsServer(t)
	nc := connect(t, s)
	js, _ := jetstream.New(nc)
	const run = "rh"
	remote, err := StartRemote(t.Context(), RemoteOptions{Bus: wrap(t, nc), Run: run, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	good := messages.NestedChanges{Agent: "worker-1", Status: "conflict", Files: []string{"f.go"}, Conflicts: []string{"f.go"}, Patch: []byte("patch")}
	climb := messages.NestedChanges{Agent: "../x", Status: "conflict", Files: []string{"f.go"}, Patch: []byte("patch")}
	many := make([]messages.NestedChanges, messages.MaxNestedChanges+1)
	for i := range many {
		many[i] = good
	}
	for name, c := range map[string]struct {
		nested []messages.NestedChanges
		kept   int
		says   string
	}{
		"climbing ID":    {[]messages.NestedChanges{good, climb}, 1, `agent "../x" is not a file name`},
		"oversized list": {many, 0, "33 nested changesets, at most 32"},
	} {
		t.Run(name, func(t *testing.T) {
			task := "lead-" + strings.ReplaceAll(name, " ", "")
			d := waitingTask(remote, task, "n1")
			remote.mu.Lock()
			ch := remote.waiting[task]
			remote.mu.Unlock()
			own := &messages.Changeset{Snapshot: strings.Repeat("a", 40), Files: []messages.FileChange{{Path: "lead.go", Status: "added", Added: 1}},
				Patch: []byte("own patch")}
			b, _ := json.Marshal(messages.Result{V: messages.ProtocolVersion, Run: run, Agent: task, Kind: "lead", Node: "n1", Attempt: 1,
				Status: "completed", Reason: "finished", Text: "led", Changes: own, Nested: c.nested})
			h := d.sign(nats.Header{jetstream.MsgIDHeader: []string{task}}, b)
			if _, err := js.PublishMsg(t.Context(), &nats.Msg{Subject: bus.ResultSubject(DefaultPrefix, run, task), Data: b, Header: h}); err != nil {
				t.Fatal(err)
			}
			var res actors.AgentResult
			select {
			case res = <-ch.done:
			case <-time.After(10 * time.Second):
				t.Fatal("the result was refused as a whole")
			}
			if res.Text != "led" || res.Changeset == nil || string(res.Changeset.Patch) != "own patch" {
				t.Errorf("the rest of the result was lost: %+v", res)
			}
			if len(res.Nested) != c.kept || !strings.Contains(res.NestedErr, c.says) || !strings.Contains(res.NestedErr, "nested changes refused") {
				t.Errorf("kept %d nested (want %d), error %q (want it to say %q)", len(res.Nested), c.kept, res.NestedErr, c.says)
			}
			for _, n := range res.Nested {
				if n.Agent != "worker-1" {
					t.Errorf("kept %q", n.Agent)
				}
			}
		})
	}
}
