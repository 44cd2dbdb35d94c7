package readme

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// README's command list is the top-level usage of `orchestrator --help`,
// line for line: a command or flag added to one and not the other fails.
func TestReadmeCommandListMatchesHelp(t *testing.T) {
	readme := readmeText(t)
	i := strings.Index(readme, "\n## Commands\n")
	if i < 0 {
		t.Fatal("README.md has no Commands section")
	}
	m := regexp.MustCompile("(?s)```\n(.*?)```").FindStringSubmatch(readme[i:])
	if m == nil {
		t.Fatal("no command list under Commands")
	}
	bin := sharedBin(t, commandLines(shBlocks(t, readme, tryOutHeading)[0])[0])
	out, errs, code := sh(t, repoRoot(t), nil, filepath.Join(bin, "orchestrator")+" --help", time.Minute)
	if code != 0 {
		t.Fatalf("orchestrator --help: exit %d: %s", code, errs)
	}
	_, usage, ok := strings.Cut(out, "Usage:\n")
	if !ok {
		t.Fatalf("--help has no Usage:\n%s", out)
	}
	usage, _, _ = strings.Cut(usage, "\n\n")
	var want []string
	for _, l := range strings.Split(usage, "\n") {
		want = append(want, strings.TrimPrefix(l, "  "))
	}
	if got := strings.TrimRight(m[1], "\n"); got != strings.Join(want, "\n") {
		t.Errorf("README's command list is not orchestrator --help's:\nREADME:\n%s\n--help:\n%s", got, strings.Join(want, "\n"))
	}
}
