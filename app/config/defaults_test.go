package config

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/troupe-ai/troupe/configs"
)

// The defaults decoded without their comments are the defaults decoded
// from the file as written, and the file loses nothing but comments.
func TestDefaultsWithoutComments(t *testing.T) {
	t.Parallel()
	var full, stripped Config
	if err := decodeInto(&full, configs.Default, "configs/default.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := decodeInto(&stripped, defaultYAML(), "configs/default.yaml"); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(full, stripped) {
		t.Errorf("the defaults without comments decode differently:\n%+v\n%+v", stripped, full)
	}
	if got, want := bytes.Count(defaultYAML(), []byte("\n")), bytes.Count(configs.Default, []byte("\n")); got != want {
		t.Errorf("%d lines without comments, %d in the file: errors would name the wrong line", got, want)
	}
	if bytes.Contains(defaultYAML(), []byte("#")) {
		t.Errorf("a comment is left:\n%s", defaultYAML())
	}
}

func TestStripComments(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"# all comment\na: 1 # note\n":   "\na: 1\n",
		`a: "x # y" # z`:                 `a: "x # y"` + "\n",
		`a: 'it''s # here' # z`:          `a: 'it''s # here'` + "\n",
		`a: "q\" # still" # z`:           `a: "q\" # still"` + "\n",
		"a: b#c\n":                       "a: b#c\n",
		"a: [1, 2]\t# tab\nb: {}  #\n":   "a: [1, 2]\nb: {}\n",
		"  # indented comment\n  c: d\n": "\n  c: d\n",
	} {
		if got := string(stripComments([]byte(in))); got != want {
			t.Errorf("stripComments(%q) = %q, want %q", in, got, want)
		}
	}
}
