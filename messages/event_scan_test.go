package messages

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// scanSamples are events as json.Marshal writes them, and variants.
func scanSamples(t testing.TB) [][]byte {
	t.Helper()
	full, err := NewEvent("r1", "explore-1a2b", EvtToolStarted, 7, ToolStarted{Round: 2, CallID: "c1", Tool: "grep", Args: json.RawMessage(`{"pattern":"func main"}`)})
	if err != nil {
		t.Fatal(err)
	}
	full.Parent, full.Kind, full.Node, full.Attempt = "root", "explore", "node-1", 2
	bare := Event{V: 1, ID: "x", Time: time.Unix(1700000000, 5).UTC(), Run: "r", Agent: "a", Seq: 1, Type: "agent.started"}
	var out [][]byte
	for _, ev := range []Event{full, bare} {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return append(out,
		[]byte(`{"v":1,"id":"x","time":"2025-01-02T03:04:05Z","run":"r","agent":"a","seq":1,"type":"t","data":{"a":[1,2,{"b":"\u00e9"}]}}`),
		[]byte(`{"v":1,"id":"x","time":"2025-01-02T03:04:05Z","run":"r","run":"other","agent":"a","seq":1,"type":"t"}`),
		[]byte(`{"v":1,"id":"x","time":"2025-01-02T03:04:05Z","RUN":"other","run":"r","agent":"a","seq":1,"type":"t"}`),
		[]byte(`{"v":1,"id":"x","time":"2025-01-02T03:04:05Z","run":"r\u002e","agent":"a","seq":1,"type":"t"}`),
		[]byte(`{"v":1,"id":"x","time":"2025-01-02T03:04:05Z","run":"r","agent":"a","seq":1,"type":"t","data": {} }`),
		[]byte(`{"v":1,"id":"x","time":"not a time","run":"r","agent":"a","seq":1,"type":"t"}`),
		[]byte(`{"v":01,"id":"x","time":"2025-01-02T03:04:05Z","run":"r","agent":"a","seq":1,"type":"t"}`),
		[]byte(`{"v":1,"id":"x","time":"2025-01-02T03:04:05Z","run":"r","agent":"a","seq":1,"type":"t","data":{"x":}}`),
	)
}

// What ScanEvent accepts, json.Unmarshal decodes to the same Event; the
// events json.Marshal writes are accepted; a repeated key, a key in
// another case, an escape, white space or a bad time are left to
// json.Unmarshal.
func TestScanEventAgreesWithUnmarshal(t *testing.T) {
	samples := scanSamples(t)
	for i, b := range samples {
		ev, ok := ScanEvent(b)
		if want := i < 3; ok != want {
			t.Errorf("sample %d: accepted %v, want %v: %s", i, ok, want, b)
		}
		checkScanned(t, b, ev, ok)
	}
}

// checkScanned fails when ScanEvent accepted b and json.Unmarshal reads it
// otherwise.
func checkScanned(t *testing.T, b []byte, ev Event, ok bool) {
	t.Helper()
	if !ok {
		return
	}
	var want Event
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("scanned %s, which json.Unmarshal refuses: %v", b, err)
	}
	data, wantData := ev.Data, want.Data
	ev.Data, want.Data = nil, nil
	if !reflect.DeepEqual(ev, want) || !bytes.Equal(data, wantData) {
		t.Fatalf("%s:\nscanned   %+v %s\nunmarshal %+v %s", b, ev, data, want, wantData)
	}
}

func FuzzScanEvent(f *testing.F) {
	for _, b := range scanSamples(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, ok := ScanEvent(b)
		checkScanned(t, b, ev, ok)
	})
}

func BenchmarkScanEvent(b *testing.B) {
	raw := scanSamples(b)[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ScanEvent(raw); !ok {
			b.Fatal("refused")
		}
	}
}

func BenchmarkUnmarshalEvent(b *testing.B) {
	raw := scanSamples(b)[0]
	b.ReportAllocs()
	for b.Loop() {
		var ev Event
		if err := json.Unmarshal(raw, &ev); err != nil {
			b.Fatal(err)
		}
	}
}
