package convo

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// seedConversations returns JSON forms of real conversations as fuzz seeds.
func seedConversations(f *testing.F) [][]byte {
	c := sampleConv(f)
	b, err := json.Marshal(c)
	if err != nil {
		f.Fatal(err)
	}
	empty, _ := json.Marshal(newConv(f, Config{Window: 10}))
	return [][]byte{b, empty, []byte(`{"v":1,"config":{"window":5},"entries":[{"role":"tool","tool_call_id":"x"}]}`),
		[]byte(`{"v":1,"config":{"window":5},"chars_per_token":1e308,"entries":[]}`), []byte(`null`)}
}

// FuzzConversationJSON: decoding never panics; whatever decodes is a
// conversation whose requests pair every call (but a pending last one),
// whose sizes add up, and which survives a second round trip unchanged.
func FuzzConversationJSON(f *testing.F) {
	for _, s := range seedConversations(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Conversation
		if err := json.Unmarshal(data, &c); err != nil {
			return
		}
		if c.cfg.Window == 0 {
			return // JSON null leaves the zero value, which New never makes
		}
		if r := c.CharsPerToken(); r < MinCharsPerToken || r > MaxCharsPerToken {
			t.Fatalf("ratio %v out of bounds", r)
		}
		sum := 0
		for _, e := range c.Entries() {
			sum += MessageChars(e.Message)
		}
		if sum != c.chars || c.Estimate() < 0 {
			t.Fatalf("sizes: entries %d, total %d, estimate %d", sum, c.chars, c.Estimate())
		}
		if _, err := scanPairs(c.Messages(), true); err != nil {
			t.Fatalf("decoded an invalid conversation: %v", err)
		}
		b, err := json.Marshal(&c)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var c2 Conversation
		if err := json.Unmarshal(b, &c2); err != nil {
			t.Fatalf("decode of re-encoded: %v\n%s", err, b)
		}
		if !reflect.DeepEqual(c.Entries(), c2.Entries()) || c.Estimate() != c2.Estimate() {
			t.Fatalf("round trip changed the conversation")
		}
		c.Evict() // must not panic on any decoded state
	})
}

// FuzzLoadCheckpoint: any file content gives a checkpoint or an error
// naming the file, never a panic.
func FuzzLoadCheckpoint(f *testing.F) {
	cp := sampleCheckpoint(f)
	b, err := json.Marshal(cp)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/3])
	f.Add([]byte(`{"v":1,"run":"r","agent":"a","conversation":{"v":1,"config":{"window":1},"entries":[]}}`))
	f.Add([]byte(`{"v":1,"run":"r","agent":"a","conversation":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, CheckpointFile)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := LoadCheckpoint(dir)
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) || !strings.Contains(err.Error(), path) {
				t.Fatalf("err = %v, want ErrCorruptCheckpoint naming %s", err, path)
			}
			return
		}
		if got.Conversation == nil || got.Run == "" || got.Agent == "" {
			t.Fatalf("loaded an incomplete checkpoint: %+v", got)
		}
		got.Conversation.Messages()
	})
}
