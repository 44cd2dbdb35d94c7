package messages

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNewEventAndValidate(t *testing.T) {
	t.Parallel()
	ev, err := NewEvent("run1", "root", EvtToolFinished, 1, map[string]any{"tool": "grep"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Validate(); err != nil {
		t.Fatalf("fresh event invalid: %v", err)
	}
	if ev.V != EventVersion || ev.ID == "" || ev.Time.Location().String() != "UTC" || string(ev.Data) != `{"tool":"grep"}` {
		t.Errorf("event %+v", ev)
	}
	b, _ := json.Marshal(ev)
	for _, key := range []string{`"v":1`, `"id":`, `"time":`, `"run":"run1"`, `"agent":"root"`, `"seq":1`, `"type":"tool.finished"`, `"data":{"tool":"grep"}`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("wire form lacks %s: %s", key, b)
		}
	}
	if _, err := NewEvent("r", "a", "x", 1, func() {}); err == nil {
		t.Error("unmarshallable data accepted")
	}
	bad := []Event{{V: 2, ID: "i", Run: "r", Agent: "a", Seq: 1, Type: "t"}, {V: 1, Run: "r", Agent: "a", Seq: 1, Type: "t"},
		{V: 1, ID: "i", Agent: "a", Seq: 1, Type: "t"}, {V: 1, ID: "i", Run: "r", Agent: "a", Type: "t"},
		{V: 1, ID: "i", Run: "r", Agent: "a", Seq: 1, Type: "a b"}}
	for _, e := range bad {
		if e.Validate() == nil {
			t.Errorf("invalid event accepted: %+v", e)
		}
	}
}

// FuzzEvent: any bytes from the wire either fail to decode or validate, or
// decode into an event that survives a round trip unchanged. No panics.
func FuzzEvent(f *testing.F) {
	ev, _ := NewEvent("run1", "root", EvtAgentStarted, 3, map[string]any{"task": "x"})
	good, _ := json.Marshal(ev)
	for _, s := range []string{string(good), `{}`, `{"v":1}`, `[]`, `{"v":1,"id":"a","run":"r","agent":"a","seq":1,"type":"x","data":null}`, `{"time":"bogus"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var e Event
		if json.Unmarshal(b, &e) != nil || e.Validate() != nil {
			return
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("valid event does not re-encode: %v", err)
		}
		var back Event
		if err := json.Unmarshal(out, &back); err != nil || back.Validate() != nil || back.Seq != e.Seq || back.Type != e.Type || back.ID != e.ID {
			t.Fatalf("round trip changed the event: %+v vs %+v (%v)", e, back, err)
		}
	})
}
