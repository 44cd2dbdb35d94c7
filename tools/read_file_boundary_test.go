package tools

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// read_file agrees with a plain line splitter on files whose size lands on
// and around the reader's buffer boundaries (4 KiB, 64 KiB, 1 MiB), with
// and without a final line end, with LF and CRLF, including files that are
// one single line: the last line is always there, never "(empty file)".
func TestReadFileBufferBoundaries(t *testing.T) {
	t.Parallel()
	s := newTestSession(t)
	for _, size := range []int{4096, 65536, 131072, 1 << 20} {
		for delta := -2; delta <= 2; delta++ {
			for _, shape := range []string{"lines", "lines-crlf", "one-line"} {
				for _, finalNL := range []bool{true, false} {
					total := size + delta
					content := makeContent(total, shape, finalNL)
					name := fmt.Sprintf("f-%d-%s-%v.txt", total, shape, finalNL)
					if err := os.WriteFile(filepath.Join(s.Workspace.Root(), name), []byte(content), 0o644); err != nil {
						t.Fatal(err)
					}
					lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
					n := len(lines)
					last := strings.TrimSuffix(lines[n-1], "\r")
					r := runTool(t, ReadFile(), s, fmt.Sprintf(`{"path":%q,"offset":%d,"limit":1}`, name, n))
					want := fmt.Sprintf("L%d: %s", n, last[:min(len(last), 40)])
					if r.IsError || !strings.HasPrefix(r.Text, want) {
						t.Errorf("%s: %.80q, want a line starting %.60q", name, r.Text, want)
					}
				}
			}
		}
	}
}

// makeContent is total bytes of text: 99-character lines, or one line.
func makeContent(total int, shape string, finalNL bool) string {
	end := "\n"
	if shape == "lines-crlf" {
		end = "\r\n"
	}
	var b strings.Builder
	body := total
	if finalNL {
		body -= len(end)
	}
	if shape == "one-line" {
		b.WriteString(strings.Repeat("z", body))
	} else {
		for i := 0; b.Len() < body; i++ {
			line := fmt.Sprintf("line %06d ", i) + strings.Repeat("y", 99-12)
			if b.Len()+len(line)+len(end) > body {
				b.WriteString(strings.Repeat("t", body-b.Len()))
				break
			}
			b.WriteString(line + end)
		}
	}
	if finalNL {
		b.WriteString(end)
	}
	return b.String()
}
