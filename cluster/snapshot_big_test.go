package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/internal/testfiles"
	"github.com/troupe-ai/troupe/llm/llmtest"
	"github.com/troupe-ai/troupe/messages"
)

// The sizes of the files of TestRemoteBigChangesKeepMemoryBounded.
const (
	remoteBigChanged = 210 << 20 // random bytes the remote worker writes over a tracked file
	remoteBigNew     = 48 << 20  // random bytes it adds as a new file
	remoteBigLimit   = 256 << 20 // agent.max_change_bytes, raised for them
	remoteHuge       = 1 << 30   // over the default agent.max_change_bytes
)

// remoteRSSReport is what the child process running a requester and a
// node says.
type remoteRSSReport struct {
	Changes []messages.ChangeOutcome `json:"changes"`
	MaxKB   int64                    `json:"max_rss_kb"`
	dir     string                   // where the child worked
}

// A remote worker (on a node, over NATS) writing a 210 MiB random file
// over a tracked one and a 48 MiB new one, with agent.max_change_bytes
// raised for them, has them land byte-identical in the requester's
// workspace with the process's peak RSS (the node's, the requester's and
// the embedded NATS server's together; git's processes apart) under 300
// MB: the node captures without a patch, spools git's patch to a file
// and streams it into the changes bucket; the requester streams it into
// a file, proves its SHA-256, and git applies it from there. Run in a
// child process, whose peak RSS is its own.
func TestRemoteBigChangesKeepMemoryBounded(t *testing.T) {
	rep := runRemoteRSSChild(t, "big")
	t.Logf("peak RSS of the requester and the node: %d MB", rep.MaxKB/1024)
	if len(rep.Changes) != 1 || rep.Changes[0].Status != messages.ChangeStatusApplied {
		t.Fatalf("changes %+v, want one applied", rep.Changes)
	}
	if rep.MaxKB > 300*1024 && !raceEnabled { // the race detector's shadow memory is not the program's
		t.Errorf("peak RSS %d MB: want under 300 MB", rep.MaxKB/1024)
	}
	for _, name := range []string{"changed.bin", "new.bin"} {
		if got, want := bigFileSum(t, filepath.Join(rep.dir, "requester", name)), bigFileSum(t, filepath.Join(rep.dir, "src-"+name)); got != want {
			t.Errorf("%s landed as %s, the worker's is %s", name, got, want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(rep.dir, "requester", "notes.txt")); err != nil || string(b) != "written on the node\n" {
		t.Errorf("notes.txt landed as %q (%v)", b, err)
	}
}

// A remote worker writing a 1 GiB file (over the default
// agent.max_change_bytes, 100 MiB) and a small one: the big one is named
// with its size in the run's outcome (run --json), not shipped, and the
// small one lands; the process's peak RSS stays under 300 MB.
func TestRemoteHugeFileIsReportedNotShipped(t *testing.T) {
	rep := runRemoteRSSChild(t, "huge")
	t.Logf("peak RSS of the requester and the node: %d MB", rep.MaxKB/1024)
	want := messages.OversizeFile{Path: "huge.bin", Bytes: remoteHuge}
	if len(rep.Changes) != 1 || rep.Changes[0].Status != messages.ChangeStatusApplied || len(rep.Changes[0].Oversize) != 1 ||
		rep.Changes[0].Oversize[0] != want {
		t.Fatalf("changes %+v, want one applied naming huge.bin (1 GiB)", rep.Changes)
	}
	if rep.MaxKB > 300*1024 && !raceEnabled { // the race detector's shadow memory is not the program's
		t.Errorf("peak RSS %d MB: want under 300 MB", rep.MaxKB/1024)
	}
	if _, err := os.Lstat(filepath.Join(rep.dir, "requester", "huge.bin")); err == nil {
		t.Error("the file over the limit reached the workspace")
	}
	if b, err := os.ReadFile(filepath.Join(rep.dir, "requester", "notes.txt")); err != nil || string(b) != "written on the node\n" {
		t.Errorf("notes.txt landed as %q (%v)", b, err)
	}
}

// runRemoteRSSChild runs TestRemoteRSSChild in mode and returns its report.
func runRemoteRSSChild(t *testing.T, mode string) remoteRSSReport {
	t.Helper()
	needGit(t)
	dir := t.TempDir()
	cmd := exec.Command(plainBinary(t), "-test.run=^TestRemoteRSSChild$", "-test.v")
	cmd.Env = append(os.Environ(), "TROUPE_REMOTE_RSS_CHILD="+dir, "TROUPE_REMOTE_RSS_MODE="+mode)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var rep remoteRSSReport
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err == nil {
		err = json.Unmarshal(data, &rep)
	}
	if err != nil {
		t.Fatalf("child's report: %v\n%s", err, out)
	}
	rep.dir = dir
	return rep
}

// plainBinary is this package's test binary without the race detector:
// this one, or, under -race, one built for the child (the detector would
// measure its own shadow memory and take minutes over the big files; the
// code under test is the same).
func plainBinary(t *testing.T) string {
	t.Helper()
	if !raceEnabled {
		return os.Args[0]
	}
	bin := filepath.Join(t.TempDir(), "cluster.test")
	if out, err := exec.Command("go", "test", "-c", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build the child without -race: %v\n%s", err, out)
	}
	return bin
}

// TestRemoteRSSChild is the requester and node of the tests above (run
// only as their child): a run whose worker, placed on a node over an
// embedded NATS server, writes big files with the shell tool.
func TestRemoteRSSChild(t *testing.T) {
	dir := os.Getenv("TROUPE_REMOTE_RSS_CHILD")
	if dir == "" {
		t.Skip("the child of TestRemoteBigChangesKeepMemoryBounded")
	}
	requester, nodeWS := filepath.Join(dir, "requester"), filepath.Join(dir, "node")
	writeURandom(t, filepath.Join(requester, "changed.bin"), 1<<20)
	bigRepos(t, requester, nodeWS)
	command := "truncate -s " + strconv.Itoa(remoteHuge) + " huge.bin"
	settings := actors.Settings{PlanFirst: map[string]bool{"root": false, "worker": false}}
	if os.Getenv("TROUPE_REMOTE_RSS_MODE") == "big" {
		src := func(name string) string { return filepath.Join(dir, "src-"+name) }
		writeURandom(t, src("changed.bin"), remoteBigChanged)
		writeURandom(t, src("new.bin"), remoteBigNew)
		command = fmt.Sprintf("cp %s changed.bin && cp %s new.bin", src("changed.bin"), src("new.bin"))
		settings.MaxChangeBytes = remoteBigLimit
	}
	shell, _ := json.Marshal(map[string]string{"command": command})
	srv := llmtest.New(llmtest.Script{Agents: []llmtest.AgentScript{
		{Match: llmtest.Matcher{Kind: "root"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "delegate", Args: json.RawMessage(`{"type":"worker","task":"write big files"}`)}}},
			{Text: "done"}}},
		{Match: llmtest.Matcher{Kind: "worker"}, Turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "shell", Args: shell},
				{Name: "write_file", Args: json.RawMessage(`{"path":"notes.txt","content":"written on the node\n"}`)}}},
			{Text: "written"}}},
	}})
	defer srv.Close()
	res, _ := remoteRun(t, srv, requester, nodeWS, []string{"worker"}, actors.Options{Settings: settings})
	rep := remoteRSSReport{Changes: res.Changes, MaxKB: peakRSS(t)}
	data, err := json.Marshal(rep)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "report.json"), data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// bigRepos makes the requester's repository at requester (holding what
// is there, and main.go) and the node's clone of it at node.
func bigRepos(t testing.TB, requester, node string) {
	t.Helper()
	for name, text := range map[string]string{".gitignore": ".troupe/\n", "main.go": "package main\n"} {
		if err := os.WriteFile(filepath.Join(requester, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testfiles.Git(t, requester, "init", "-q")
	testfiles.Git(t, requester, "add", "-A")
	testfiles.Git(t, requester, "commit", "-q", "-m", "first")
	testfiles.Git(t, filepath.Dir(node), "clone", "-q", requester, node)
}

// writeURandom writes n random bytes from the kernel to the file at abs
// (making its directory), in pieces.
func writeURandom(t testing.TB, abs string, n int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	f, err := os.Create(abs)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(f, src, n); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// bigFileSum is the SHA-256 of the file at abs, read in pieces ("" when
// it cannot be read).
func bigFileSum(t *testing.T, abs string) string {
	f, err := os.Open(abs)
	if err != nil {
		t.Error(err)
		return ""
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Error(err)
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))
}

// peakRSS is the process's peak RSS so far (VmHWM), in KB: that of its
// own memory since it began, unlike getrusage's, which a child process
// inherits from the test that started it.
func peakRSS(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
