package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	t.Parallel()
	r := New("sk-live-0123456789", "  nats-token-abc  ", "short", "", "sk-live-0123456789")
	cases := []struct{ in, want string }{
		{"key=sk-live-0123456789;", "key=[redacted];"},
		{"sk-live-0123456789sk-live-0123456789", "[redacted][redacted]"},
		{"token nats-token-abc here", "token [redacted] here"}, // trimmed when built
		{"short words stay", "short words stay"},               // under MinLen
		{"nothing here", "nothing here"},
	}
	for _, c := range cases {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// A secret that contains another is masked whole, not in pieces.
func TestLongestFirst(t *testing.T) {
	t.Parallel()
	r := New("abcdefgh", "xxabcdefghyy")
	if got := r.String("1 xxabcdefghyy 2 abcdefgh"); got != "1 [redacted] 2 [redacted]" {
		t.Errorf("got %q", got)
	}
}

func TestNilAndEmpty(t *testing.T) {
	t.Parallel()
	var r *Redactor
	if !r.Empty() || r.String("abcdefgh") != "abcdefgh" || r.Contains([]byte("x")) || r.Error(nil) != nil {
		t.Error("a nil redactor changed something")
	}
	if New("", "tiny", "  ") != nil {
		t.Error("only too-short values: want nil")
	}
	var b bytes.Buffer
	if w := r.Writer(&b); w != &b {
		t.Error("a nil redactor wraps its writer")
	}
}

// In JSON, a secret with characters JSON escapes is found in its escaped
// form, and the document stays valid even where a byte replacement would
// have cut an escape sequence.
func TestJSON(t *testing.T) {
	t.Parallel()
	secret := `p<a"ss\word>&1`
	r := New(secret, "nopassword99")
	doc, _ := json.Marshal(map[string]any{"text": "a " + secret + " b", "n": json.Number("12345678901234567890"),
		"list": []any{secret, 1.5, true, nil}, secret: "key too", "nl": "\nopassword99"})
	out := r.JSON(doc)
	if !json.Valid(out) {
		t.Fatalf("invalid JSON: %s", out)
	}
	var back map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&back); err != nil {
		t.Fatal(err)
	}
	var all any
	_ = json.Unmarshal(out, &all)
	if leaksIn(all, secret) || leaksIn(all, "nopassword99") {
		t.Fatalf("a secret survived: %s", out)
	}
	if back["text"] != "a [redacted] b" || back["n"] != json.Number("12345678901234567890") || back[Mask] != "key too" {
		t.Errorf("got %v", back)
	}
	// "\nopassword99" holds no secret: the newline is not an "n".
	if back["nl"] != "\nopassword99" {
		t.Errorf("nl = %q", back["nl"])
	}
	clean := []byte(`{"a":"nothing"}`)
	if got := r.JSON(clean); &got[0] != &clean[0] {
		t.Error("a clean document was copied")
	}
	if got := r.JSON([]byte("not json nopassword99")); string(got) != "not json [redacted]" {
		t.Errorf("not JSON: %s", got)
	}
}

func TestWriterAndError(t *testing.T) {
	t.Parallel()
	r := New("sk-abcdefgh")
	var b bytes.Buffer
	w := r.Writer(&b)
	n, err := w.Write([]byte(`{"level":"warn","error":"401 for key sk-abcdefgh"}` + "\n"))
	if err != nil || n != 51 || b.String() != `{"level":"warn","error":"401 for key [redacted]"}`+"\n" {
		t.Errorf("wrote %d %v %q", n, err, b.String())
	}
	base := &fs.PathError{Op: "open", Path: "sk-abcdefgh", Err: fs.ErrNotExist}
	e := r.Error(base)
	if e.Error() != "open [redacted]: file does not exist" || !errors.Is(e, fs.ErrNotExist) {
		t.Errorf("error %q", e)
	}
	var pe *fs.PathError
	if !errors.As(e, &pe) {
		t.Error("the chain is lost")
	}
}

// Whatever the input, no secret survives String, and JSON written by
// encoding/json stays valid JSON without the secret in any of its strings. (An occurrence that
// overlaps a mask, like a secret "d]abcdefg" after one, is not a leak: the
// secret was not in the text there.)
func FuzzRedact(f *testing.F) {
	f.Add("sk-abcdefgh", `{"a":"sk-abcdefgh"}`)
	f.Add(`q"uo\te<>&x`, `["q\"uo\\te\u003c\u003e\u0026x", 1]`)
	f.Add("nabcdefgh", `"\nabcdefgh nabcdefgh"`)
	f.Fuzz(func(t *testing.T, secret, text string) {
		r := New(secret)
		if r.Empty() {
			return
		}
		s := strings.TrimSpace(secret)
		if out := r.String(text); leaks(out, s) {
			t.Fatalf("String(%q) = %q leaks %q", text, out, s)
		}
		// JSON as this process writes it: encoding/json's escaping.
		var doc any
		if json.Unmarshal([]byte(text), &doc) != nil {
			return
		}
		canon, err := json.Marshal(doc)
		if err != nil {
			return
		}
		text = string(canon)
		js := r.JSON(canon)
		if !json.Valid(js) {
			t.Fatalf("JSON(%q) = %q is invalid", text, js)
		}
		var v any
		_ = json.Unmarshal(js, &v)
		if leaksIn(v, s) {
			t.Fatalf("JSON(%q) = %q still holds %q", text, js, s)
		}
	})
}

// leaks reports an occurrence of s in out that overlaps no mask.
func leaks(out, s string) bool {
	for i := 0; ; {
		j := strings.Index(out[i:], s)
		if j < 0 {
			return false
		}
		at := i + j
		masked := false
		for m := 0; ; {
			k := strings.Index(out[m:], Mask)
			if k < 0 {
				break
			}
			ms := m + k
			if ms < at+len(s) && at < ms+len(Mask) {
				masked = true
				break
			}
			m = ms + 1
		}
		if !masked {
			return true
		}
		i = at + 1
	}
}

func leaksIn(v any, s string) bool {
	switch x := v.(type) {
	case string:
		return leaks(x, s)
	case []any:
		for _, e := range x {
			if leaksIn(e, s) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if leaks(k, s) || leaksIn(e, s) {
				return true
			}
		}
	}
	return false
}
