package bus

import (
	"encoding/json"
	"testing"

	"github.com/troupe-ai/troupe/messages"
)

// FuzzDecodeEvent: any subject and bytes from the wire are either rejected
// with a reason or decode into a valid event published on its own subject.
// Nothing panics.
func FuzzDecodeEvent(f *testing.F) {
	ev, _ := messages.NewEvent("r1", "root", messages.EvtAgentStarted, 1, map[string]any{"task": "x"})
	good, _ := json.Marshal(ev)
	f.Add(EventSubject("troupe", "r1", "root", messages.EvtAgentStarted), good)
	f.Add("troupe.evt.r1.root.agent.started", []byte(`{"v":1}`))
	f.Add("troupe.evt.>", []byte(`[]`))
	f.Add("", []byte(`{"v":1,"id":"a","run":"r.1","agent":"a","seq":1,"type":"x"}`))
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		ev, err := DecodeEvent("troupe", subject, data, 1<<16)
		if err != nil {
			if reason(err) == "" {
				t.Fatalf("rejection without a reason: %v", err)
			}
			return
		}
		if ev.Validate() != nil || subject != EventSubject("troupe", token(ev.Run), token(ev.Agent), ev.Type) {
			t.Fatalf("accepted an event that does not check: %+v on %s", ev, subject)
		}
	})
}

// FuzzParseResultSubject: a subject is either refused or splits into
// tokens that build it again. Nothing panics.
func FuzzParseResultSubject(f *testing.F) {
	f.Add(ResultSubject("troupe", "r1", "explore-1", "0123abcd"))
	f.Add("troupe.result.r1.explore-1")
	f.Add("troupe.result.r1..x")
	f.Add("troupe.result.r1.a.b.c")
	f.Add("troupe.evt.r1.a.b")
	f.Fuzz(func(t *testing.T, subject string) {
		run, agent, tag, err := ParseResultSubject("troupe", subject)
		if err != nil {
			return
		}
		want := "troupe.result." + run + "." + agent
		if tag != "" {
			want += "." + tag
		}
		if subject != want || CheckToken("run", run) != nil || CheckToken("agent", agent) != nil {
			t.Fatalf("%q parsed as %q %q %q", subject, run, agent, tag)
		}
	})
}
