package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/app/config"
)

// The Configuration section's sample error is the one troupe gives: a
// file setting that value on that line is refused in exactly those words.
func TestReadmeConfigError(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Configuration")
	if i < 0 {
		t.Fatal("README.md has no Configuration section")
	}
	m := regexp.MustCompile(`(?m)^orchestrator: config: (\S+) line (\d+): ([a-z_.]+): (.*)$`).FindStringSubmatch(s[i:])
	if m == nil {
		t.Fatal("the Configuration section shows no config error")
	}
	path, key, problem := m[1], m[3], m[4]
	line, _ := strconv.Atoi(m[2])
	got := regexp.MustCompile(`got "([^"]*)"$`).FindStringSubmatch(problem)
	if got == nil {
		t.Fatalf("the sample error %q does not say what it got", m[0])
	}
	// A document setting key to the value on the line the sample names.
	parts := strings.Split(key, ".")
	var doc strings.Builder
	for range line - len(parts) {
		doc.WriteString("# ...\n")
	}
	for d, p := range parts {
		doc.WriteString(strings.Repeat("  ", d) + p + ":")
		if d == len(parts)-1 {
			doc.WriteString(" " + got[1])
		}
		doc.WriteString("\n")
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(doc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Sources{File: file})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(m[0], path, file, 1)
	if err := c.Validate(); err == nil || "orchestrator: config: "+err.Error() != want {
		t.Errorf("README.md says\n  %s\ntroupe says\n  orchestrator: config: %v", want, err)
	}
}

// The Configuration section's sample refusal of a workspace's own config
// is the one troupe gives for a workspace file setting that key on that
// line.
func TestReadmeWorkspaceConfigRefusal(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^orchestrator: config (/\S+/)\.troupe/config\.yaml line (\d+): ([a-z_.]+): (.*)$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("the Configuration section shows no refusal of a workspace's config")
	}
	line, _ := strconv.Atoi(m[2])
	parts := strings.Split(m[3], ".")
	var doc strings.Builder
	for range line - len(parts) {
		doc.WriteString("# ...\n")
	}
	for d, p := range parts {
		doc.WriteString(strings.Repeat("  ", d) + p + ":")
		if d == len(parts)-1 {
			doc.WriteString(" https://elsewhere.example/v1")
		}
		doc.WriteString("\n")
	}
	ws := t.TempDir()
	file := filepath.Join(ws, ".troupe", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(doc.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = config.Load(config.Sources{Workspace: ws})
	want := strings.Replace(m[0], m[1], ws+"/", 1)
	if err == nil || "orchestrator: "+err.Error() != want {
		t.Errorf("README.md says\n  %s\ntroupe says\n  orchestrator: %v", want, err)
	}
}

// The Provider rate limits section's config sample loads and validates,
// and its limit reaches the role's model.
func TestReadmeRateLimitConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "## Provider rate limits")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(s[max(i, 0):])
	if i < 0 || m == nil {
		t.Fatal("README.md has no Provider rate limits section with a yaml sample")
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Sources{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if l := c.Model.RateLimits()[c.Model.Default]; l.RPM != 500 || l.TPM != 200000 || c.Run.Priority != 2 || c.Model.Attempts() != 4 {
		t.Errorf("the sample gives %+v, priority %d, %d attempts", l, c.Run.Priority, c.Model.Attempts())
	}
}

// The MCP servers section's config sample loads and validates, and its
// filesystem server serves ${TROUPE_TREE}.
func TestReadmeMCPConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "### MCP servers")
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindStringSubmatch(s[max(i, 0):])
	if i < 0 || m == nil {
		t.Fatal("README.md has no MCP servers section with a yaml sample")
	}
	file := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(file, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := config.Load(config.Sources{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if fs := c.MCP.Servers["files"].Command; len(fs) == 0 || fs[len(fs)-1] != config.TreeRef {
		t.Errorf("the sample's filesystem server runs %q", fs)
	}
}
