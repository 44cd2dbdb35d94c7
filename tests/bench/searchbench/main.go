// Command searchbench times troupe's grep and find_files tools against
// ripgrep and fd on one directory tree and checks that they agree. It is
// run by tests/bench/search.sh, which builds the binaries it needs.
//
// Each query runs as a whole process on both sides (the orchestrator's
// `tools call` against rg or fd), alternating ours and theirs, several
// times; the table shows the median wall time of each and their ratio,
// the same for CPU time (user + system, steadier than wall time on a
// shared machine), and whether the results are identical as sets (of
// paths, of "path: N" counts, or of line keys in content mode). When a
// result is bigger than one page, the totals are compared instead, from
// the tool's metadata. Pages are kept under the tools' output caps, so
// that nothing is spilled into the searched tree.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// query is one measured call and the external command with its meaning.
type query struct {
	label string
	tool  string // grep or find_files
	args  string // JSON arguments of our tool
	ext   string // "rg" or "fd"
	xargs []string
	kind  string // "files", "count", "content" or "find": how to compare
}

var queries = []query{
	{"literal word", "grep", `{"pattern":"ErrUnexpectedEOF"}`, "rg", []string{"-l", "ErrUnexpectedEOF"}, "files"},
	{"literal, many files", "grep", `{"pattern":"func main"}`, "rg", []string{"-l", "-S", "func main"}, "files"},
	{"smart-case word", "grep", `{"pattern":"bufio"}`, "rg", []string{"-l", "-S", "bufio"}, "files"},
	{"alternation", "grep", `{"pattern":"MarshalJSON|UnmarshalJSON"}`, "rg", []string{"-l", "-S", "MarshalJSON|UnmarshalJSON"}, "files"},
	{"class + quantifier", "grep", `{"pattern":"[A-Z][a-z]+Overflow"}`, "rg", []string{"-l", "-S", "[A-Z][a-z]+Overflow"}, "files"},
	{"regex, no literal", "grep", `{"pattern":"func \\(\\w+ \\*\\w+\\) Close\\(\\)"}`, "rg", []string{"-l", "-S", `func \(\w+ \*\w+\) Close\(\)`}, "files"},
	{"type=go", "grep", `{"pattern":"sync\\.Once","type":"go"}`, "rg", []string{"-l", "-S", "-t", "go", `sync\.Once`}, "files"},
	{"include=*_test.go", "grep", `{"pattern":"t\\.Parallel\\(\\)","include":"*_test.go"}`, "rg", []string{"-l", "-S", "-g", "*_test.go", `t\.Parallel\(\)`}, "files"},
	{"content, context 2", "grep", `{"pattern":"deadlineExceededError","mode":"content","context_lines":2}`, "rg", []string{"-n", "-S", "-C", "2", "deadlineExceededError"}, "content"},
	{"count mode", "grep", `{"pattern":"errors\\.Is","mode":"count"}`, "rg", []string{"-c", "-S", `errors\.Is`}, "count"},
	{"find *_test.go", "find_files", `{"pattern":"*_test.go"}`, "fd", []string{"--glob", "*_test.go"}, "find"},
	{"find testdata", "find_files", `{"pattern":"testdata"}`, "fd", []string{"--glob", "testdata"}, "find"},
	{"find *.{s,h}", "find_files", `{"pattern":"*.{s,h}"}`, "fd", []string{"--glob", "*.{s,h}"}, "find"},
}

func main() {
	ours := flag.String("ours", "", "the orchestrator binary")
	rg := flag.String("rg", "", "ripgrep, or empty to measure ours only")
	fd := flag.String("fd", "", "fd (or fdfind), or empty to measure ours only")
	dir := flag.String("dir", "", "the tree to search")
	runs := flag.Int("runs", 5, "runs of each side per query")
	flag.Parse()
	if *ours == "" || *dir == "" || *runs < 1 {
		fmt.Fprintln(os.Stderr, "usage: searchbench -ours BIN -dir DIR [-rg BIN] [-fd BIN] [-runs N]")
		os.Exit(2)
	}
	fmt.Printf("tree: %s, %d runs per side, alternating; median wall time of the whole process\n\n", *dir, *runs)
	fmt.Println("| query | ours (ms) | theirs (ms) | ratio | ours CPU (ms) | theirs CPU (ms) | CPU ratio | identical |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---|")
	failed := false
	for _, q := range queries {
		ext := map[string]string{"rg": *rg, "fd": *fd}[q.ext]
		row, err := measure(q, *ours, ext, *dir, *runs)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", q.label, err)
			failed = true
			continue
		}
		fmt.Println(row)
	}
	if failed {
		os.Exit(1)
	}
}

func measure(q query, ours, ext, dir string, runs int) (string, error) {
	// Pages stay under the tools' output caps (50 KB for grep, 30 KB for
	// find_files): a truncated result would be spilled into a file under
	// the searched tree. Bigger results are compared by their totals.
	limit := 1000
	if q.tool == "find_files" {
		limit = 400
	}
	args := strings.TrimSuffix(q.args, "}") + fmt.Sprintf(`,"limit":%d}`, limit)
	ourCmd := []string{ours, "tools", "call", q.tool, args, "--workspace", dir, "--json"}
	var extCmd []string
	if ext != "" {
		extCmd = append([]string{ext}, q.xargs...)
		if q.ext == "rg" {
			extCmd = append([]string{ext, "--no-config", "--no-require-git"}, q.xargs...)
		}
	}
	var tOurs, tTheirs, cOurs, cTheirs []time.Duration
	var outOurs, outTheirs []byte
	for range runs {
		d, cpu, out, err := timed(ourCmd, dir)
		if err != nil {
			return "", fmt.Errorf("ours: %w", err)
		}
		tOurs, cOurs, outOurs = append(tOurs, d), append(cOurs, cpu), out
		if extCmd != nil {
			d, cpu, out, err = timed(extCmd, dir)
			if err != nil {
				return "", fmt.Errorf("%s: %w", q.ext, err)
			}
			tTheirs, cTheirs, outTheirs = append(tTheirs, d), append(cTheirs, cpu), out
		}
	}
	mo, co := median(tOurs), median(cOurs)
	if extCmd == nil {
		return fmt.Sprintf("| %s | %.1f | n/a | n/a | %.1f | n/a | n/a | n/a |", q.label, ms(mo), ms(co)), nil
	}
	mt, ct := median(tTheirs), median(cTheirs)
	same, note, err := agree(q, outOurs, outTheirs)
	if err != nil {
		return "", err
	}
	verdict := "no"
	if same {
		verdict = "yes"
	}
	if note != "" {
		verdict += " (" + note + ")"
	}
	return fmt.Sprintf("| %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %s |", q.label, ms(mo), ms(mt),
		float64(mo)/float64(mt), ms(co), ms(ct), float64(co)/float64(max(ct, time.Millisecond)), verdict), nil
}

// timed runs a command in dir and returns its wall time, its CPU time and
// its output. Exit status 1 with no output is rg's and fd's "nothing
// found".
func timed(argv []string, dir string) (time.Duration, time.Duration, []byte, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 && out.Len() == 0 {
		err = nil
	}
	var cpu time.Duration
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return d, cpu, out.Bytes(), err
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
