package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The example runs offline against the scripted model: four explore agents
// grep a real workspace and every finding printed is a real path:line whose
// line holds the keyword.
func TestParallelExploreOffline(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("OPENAI_BASE_URL", "")
	ws := t.TempDir()
	files := map[string]string{
		"retry.go":        "package x\n\n// Retries are configured here.\nconst maxRetries = 3\n",
		"client/http.go":  "package client\n\nfunc configured() bool { return true }\n",
		"docs/readme.txt": "nothing to see\n",
	}
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr strings.Builder
	code := run(t.Context(), []string{"--workspace", ws, "--explorers", "4", "where are retries configured?"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	agents := map[string]bool{}
	re := regexp.MustCompile(`^(\S+):(\d+)\t(explore-\S+)$`)
	for _, l := range lines {
		m := re.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("not a finding line: %q", l)
		}
		body, ok := files[m[1]]
		if !ok {
			t.Fatalf("finding in a file that does not exist: %q", l)
		}
		n := 0
		for _, c := range m[2] {
			n = n*10 + int(c-'0')
		}
		text := strings.ToLower(strings.Split(body, "\n")[n-1])
		if !strings.Contains(text, "retries") && !strings.Contains(text, "configured") {
			t.Errorf("%s points at a line without the keywords: %q", l, text)
		}
		agents[m[3]] = true
	}
	if len(agents) != 4 {
		t.Errorf("findings from %d explore agents, want 4:\n%s", len(agents), stdout.String())
	}
	if !strings.Contains(stderr.String(), "scripted model") || !strings.Contains(stderr.String(), "completed") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

func TestParallelExploreUsage(t *testing.T) {
	var stdout, stderr strings.Builder
	if code := run(t.Context(), nil, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage:") {
		t.Errorf("no question: exit %d, stderr %q", code, stderr.String())
	}
}
