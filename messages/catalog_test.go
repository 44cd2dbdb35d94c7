package messages

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files and docs/events.md")

// goldenEvent is the example envelope of a spec, with a fixed ID and time.
func goldenEvent(t *testing.T, s EventSpec) Event {
	t.Helper()
	ev, err := NewEvent("9f1c2d3e", "explore-1a2b3c4d", s.Type, 7, s.Example)
	if err != nil {
		t.Fatal(err)
	}
	ev.ID = "0d5e2c1a-7b3f-4c9e-8a61-2f4d5e6a7b8c"
	ev.Time = time.Date(2026, 11, 24, 12, 0, 0, 123456789, time.UTC)
	ev.Parent, ev.Kind = "root", "explore"
	return ev
}

// Every catalog type has a golden envelope in testdata/events/<type>.json;
// it decodes into its own payload type and encodes back byte for byte.
func TestEventGoldenRoundTrip(t *testing.T) {
	for _, s := range Catalog() {
		path := filepath.Join("testdata", "events", s.Type+".json")
		if *update {
			b, _ := json.MarshalIndent(goldenEvent(t, s), "", "  ")
			if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: no golden file (go test ./messages -update): %v", s.Type, err)
		}
		var ev Event
		if err := json.Unmarshal(raw, &ev); err != nil || ev.Validate() != nil || ev.Type != s.Type {
			t.Fatalf("%s: golden envelope: %v / %v", s.Type, err, ev.Validate())
		}
		v, err := ev.Decode()
		if err != nil {
			t.Fatalf("%s: %v", s.Type, err)
		}
		if reflect.TypeOf(v).Elem() != reflect.TypeOf(s.Example) {
			t.Errorf("%s decodes to %T, want %T", s.Type, v, s.Example)
		}
		ex, _ := json.Marshal(s.Example)
		if got, _ := json.Marshal(v); !bytes.Equal(compact(t, got), compact(t, ex)) {
			t.Errorf("%s: decoded payload differs from the example:\n%s\n%s", s.Type, got, ex)
		}
		back, _ := json.Marshal(v)
		if !bytes.Equal(compact(t, back), compact(t, ev.Data)) {
			t.Errorf("%s: re-encoded payload differs:\n%s\n%s", s.Type, back, ev.Data)
		}
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "events", "*.json"))
	if len(files) != len(Catalog()) {
		t.Errorf("%d golden files for %d catalog types", len(files), len(Catalog()))
	}
}

func compact(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// Every event type constant is in the catalog, and every payload field is
// documented with snake_case JSON names.
func TestCatalogComplete(t *testing.T) {
	src, err := os.ReadFile("event.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "Evt") || !strings.Contains(line, "=") {
			continue
		}
		typ := strings.Trim(strings.TrimSpace(strings.SplitN(line, "=", 2)[1]), `"`)
		if _, ok := LookupEvent(typ); !ok {
			t.Errorf("event type %s has no catalog entry", typ)
		}
	}
	for _, s := range Catalog() {
		rt := reflect.TypeOf(s.Example)
		for i := 0; i < rt.NumField(); i++ {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || strings.ToLower(name) != name || f.Tag.Get("doc") == "" && !strings.HasPrefix(rt.Name(), "Budget") {
				t.Errorf("%s.%s: json name %q, doc %q", rt.Name(), f.Name, name, f.Tag.Get("doc"))
			}
		}
	}
	if _, err := (&Event{Type: "no.such"}).Decode(); err == nil {
		t.Error("unknown type decoded")
	}
}

// docs/events.md is generated from the catalog and kept in step with it.
func TestEventsDoc(t *testing.T) {
	var b bytes.Buffer
	if err := WriteEventSchema(&b, eventsDocIntro); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "docs", "events.md")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, b.Bytes()) {
		t.Fatalf("docs/events.md is stale or missing (%v): run go test ./messages -run TestEventsDoc -update", err)
	}
}

func TestDecodeAs(t *testing.T) {
	ev, _ := NewEvent("r", "a", EvtToolFinished, 1, ToolFinished{Tool: "grep", IsError: true})
	tf, err := DecodeAs[ToolFinished](ev)
	if err != nil || tf.Tool != "grep" || !tf.IsError {
		t.Fatalf("%+v %v", tf, err)
	}
	if _, err := DecodeAs[AgentEnded](ev); err == nil {
		t.Error("decoded tool.finished as AgentEnded")
	}
}

// LookupEvent answers from the catalog built once: the same spec for every
// type, and a caller changing its copy of Catalog() changes nothing.
func TestLookupEventIsTheCatalog(t *testing.T) {
	specs := Catalog()
	for _, s := range specs {
		got, ok := LookupEvent(s.Type)
		if !ok || got.Type != s.Type || got.Doc != s.Doc || reflect.TypeOf(got.New()) != reflect.TypeOf(s.New()) {
			t.Errorf("%s: looked up %+v", s.Type, got)
		}
	}
	specs[0].Type, specs[0].New = "changed", nil
	if s, ok := LookupEvent(Catalog()[0].Type); !ok || s.New == nil || Catalog()[0].Type == "changed" {
		t.Error("changing a copy of the catalog changed the catalog")
	}
	if _, ok := LookupEvent("no.such.type"); ok {
		t.Error("unknown type found")
	}
}

// BenchmarkEventDecode measures what every event a watcher reads costs to
// decode into its payload.
func BenchmarkEventDecode(b *testing.B) {
	ev, err := NewEvent("r1", "root", EvtToolFinished, 1, ToolFinished{Round: 2, CallID: "call_7", Tool: "grep", DurationMS: 3.4, OutputBytes: 61})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ev.Decode(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLookupEvent measures the catalog lookup alone.
func BenchmarkLookupEvent(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := LookupEvent(EvtToolFinished); !ok {
			b.Fatal("not found")
		}
	}
}
