package tools

import "testing"

func TestThink(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	res := callFileTool(t, s, Think(), `{"thought":"the parser fails on empty input; check lexer.go first"}`)
	if res.IsError || res.Text != "" {
		t.Fatalf("got %+v, want an empty, successful result", res)
	}
	spec := Think().Spec()
	if !spec.ReadOnly || spec.Cacheable {
		t.Fatalf("think must be read-only and not cacheable: %+v", spec)
	}
	res = callFileTool(t, s, Think(), `{}`)
	want := `invalid arguments for think: field "thought" is required but missing`
	if !res.IsError || res.Text != want {
		t.Fatalf("got %+v, want error %q", res, want)
	}
}
