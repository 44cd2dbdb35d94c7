package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func lines(n int, width int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(strings.Repeat(string(rune('a'+i%26)), width))
		b.WriteByte('\n')
	}
	return b.String()
}

func TestTruncationStrategies(t *testing.T) {
	t.Parallel()
	text := lines(100, 19) // 100 lines of 20 bytes = 2000 bytes
	head := Head(500).Apply(text)
	if !head.Truncated || len(head.Text) > 500 || !strings.HasSuffix(head.Text, "\n") {
		t.Errorf("head: truncated=%v len=%d", head.Truncated, len(head.Text))
	}
	if head.TotalBytes != 2000 || head.TotalLines != 100 {
		t.Errorf("head totals %d %d", head.TotalBytes, head.TotalLines)
	}
	hl := HeadLines(10).Apply(text)
	if !hl.Truncated || hl.KeptLines != 10 || hl.Text != text[:200] {
		t.Errorf("headlines: kept %d lines", hl.KeptLines)
	}
	ht := HeadAndTail(1000, 0.4).Apply(text)
	if !ht.Truncated || !strings.HasPrefix(ht.Text, text[:100]) || !strings.HasSuffix(ht.Text, text[len(text)-100:]) {
		t.Errorf("head+tail lost its ends")
	}
	if !strings.Contains(ht.Text, "bytes omitted ...]") {
		t.Errorf("head+tail has no omission marker: %q", ht.Text)
	}
	if ht.KeptBytes > 1000 {
		t.Errorf("head+tail kept %d bytes > 1000", ht.KeptBytes)
	}
	if c := Head(5000).Apply(text); c.Truncated || c.Text != text {
		t.Error("under the cap must be untouched")
	}
	// Never split a rune.
	u := strings.Repeat("é", 100)
	if c := Head(51).Apply(u); !strings.HasPrefix(u, c.Text) || len(c.Text) != 50 {
		t.Errorf("rune split: %d bytes", len(c.Text))
	}
	golden(t, "truncate/notices", strings.Join([]string{
		Head(500).Notice(head, "spill/x.txt"),
		HeadLines(10).Notice(hl, ""),
		HeadAndTail(1000, 0.4).Notice(ht, "spill/y.txt"),
	}, "\n")+"\n")
}

func TestExecutorSpillsTruncatedOutput(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	big := lines(3000, 39) // 120 KB
	tool := New(Spec{Name: "big", ReadOnly: true, Truncation: Head(1000)}, func(_ ctxT, _ *Session, _ struct{}) (Result, error) {
		return Text(big), nil
	})
	ex := &Executor{Tools: NewRegistry(tool), Session: s}
	r := ex.Run(t.Context(), calls("big", `{}`))[0]
	if !r.Truncated || r.SpillPath == "" {
		t.Fatalf("not truncated/spilled: %+v", r.Truncated)
	}
	if !strings.Contains(r.Text, "Full output saved to "+r.SpillPath) {
		t.Errorf("notice lacks the path: %q", r.Text[len(r.Text)-200:])
	}
	p := r.SpillPath
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.Workspace.Root(), p)
	}
	full, err := os.ReadFile(p)
	if err != nil || string(full) != big {
		t.Fatalf("spill file does not hold the full output: %v", err)
	}
	// Sweep removes files past the max age and keeps fresh ones.
	if n, _ := s.Spill.Sweep(time.Now()); n != 0 {
		t.Errorf("swept a fresh file")
	}
	if n, _ := s.Spill.Sweep(time.Now().Add(DefaultSpillMaxAge + time.Minute)); n != 1 {
		t.Errorf("sweep removed %d files, want 1", n)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("spill file survived the sweep")
	}
}

func TestTruncationOverrideFromConfig(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	s.Config.Truncation = map[string]Truncation{"big": HeadLines(2)}
	tool := New(Spec{Name: "big", ReadOnly: true}, func(_ ctxT, _ *Session, _ struct{}) (Result, error) {
		return Text("1\n2\n3\n4\n"), nil
	})
	r := (&Executor{Tools: NewRegistry(tool), Session: s}).Run(t.Context(), calls("big", `{}`))[0]
	if !strings.HasPrefix(r.Text, "1\n2\n[output truncated: showing first 2 of 4 lines.") {
		t.Errorf("override not applied: %q", r.Text)
	}
}
