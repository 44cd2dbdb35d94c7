package convo

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLoadCheckpointErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := SaveCheckpoint(dir, sampleCheckpoint(t)); err != nil {
		t.Fatal(err)
	}
	full, err := os.ReadFile(filepath.Join(dir, CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(full, &generic); err != nil {
		t.Fatal(err)
	}
	edit := func(f func(m map[string]any)) []byte {
		var m map[string]any
		_ = json.Unmarshal(full, &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	conv := func(m map[string]any) map[string]any { return m["conversation"].(map[string]any) }
	tests := []struct {
		name, want string
		data       []byte
	}{
		{"truncated", "corrupt or truncated", full[:len(full)/2]},
		{"empty", "corrupt or truncated", nil},
		{"not json", "corrupt or truncated", []byte("hello")},
		{"future version", "version 9", edit(func(m map[string]any) { m["v"] = 9 })},
		{"no agent", "missing run or agent", edit(func(m map[string]any) { delete(m, "agent") })},
		{"no conversation", "missing conversation", edit(func(m map[string]any) { delete(m, "conversation") })},
		{"conversation version", "conversation: version 2", edit(func(m map[string]any) { conv(m)["v"] = 2 })},
		{"bad window", "window = 0", edit(func(m map[string]any) { conv(m)["config"].(map[string]any)["window"] = 0 })},
		{"orphan tool message", "tool result", edit(func(m map[string]any) {
			es := conv(m)["entries"].([]any)
			conv(m)["entries"] = append(es[:2:2], es[3:]...) // drop the first assistant message
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := t.TempDir()
			path := filepath.Join(d, CheckpointFile)
			if err := os.WriteFile(path, tt.data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := LoadCheckpoint(d)
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("err = %v, want ErrCorruptCheckpoint", err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to name %s and say %q", err, path, tt.want)
			}
		})
	}
	_, err = LoadCheckpoint(t.TempDir())
	if !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("missing file: err = %v, want ErrNoCheckpoint", err)
	}
}

func TestCheckpointIDsStayInside(t *testing.T) {
	t.Parallel()
	for _, id := range []string{"", ".", "..", "../x", "a/b", `a\b`, "a\x00b"} {
		if _, err := CheckpointDir("/d", "run", id); err == nil {
			t.Errorf("agent id %q accepted", id)
		}
		if _, err := CheckpointDir("/d", id, "agent"); err == nil {
			t.Errorf("run id %q accepted", id)
		}
		if err := RemoveRun("/d", id); err == nil {
			t.Errorf("RemoveRun accepted run id %q", id)
		}
	}
	if got := DataDir("/w"); got != filepath.Join("/w", ".troupe") {
		t.Errorf("DataDir = %s", got)
	}
}

// saveAs writes a checkpoint for run/agent with parent under data.
func saveAs(t *testing.T, data, run, agent, parent string) string {
	t.Helper()
	dir, err := CheckpointDir(data, run, agent)
	if err != nil {
		t.Fatal(err)
	}
	cp := sampleCheckpoint(t)
	cp.Run, cp.Agent, cp.Parent = run, agent, parent
	if err := SaveCheckpoint(dir, cp); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLatestCheckpoint(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	if _, _, err := LatestCheckpoint(data, ""); !errors.Is(err, ErrNoCheckpoint) {
		t.Fatalf("no runs: err = %v", err)
	}
	saveAs(t, data, "r1", "root-1", "")
	saveAs(t, data, "r1", "explore-1", "root-1")
	childDir := saveAs(t, data, "r1", "explore-2", "root-1")
	// A corrupt child does not hide the root.
	if err := os.WriteFile(filepath.Join(childDir, CheckpointFile), []byte(`{"v":1,`), 0o600); err != nil {
		t.Fatal(err)
	}
	cp, dir, err := LatestCheckpoint(data, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if cp.Agent != "root-1" || filepath.Base(dir) != "root-1" {
		t.Errorf("LatestCheckpoint(r1) = %s in %s, want root-1", cp.Agent, dir)
	}
	// r2 is written later: it is the latest run.
	r2 := saveAs(t, data, "r2", "root-2", "")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(r2, CheckpointFile), later, later); err != nil {
		t.Fatal(err)
	}
	if cp, _, err := LatestCheckpoint(data, ""); err != nil || cp.Run != "r2" {
		t.Errorf("LatestCheckpoint(\"\") = %v, %v; want run r2", cp, err)
	}
	// A run whose root checkpoint is corrupt: the error names the file.
	bad := saveAs(t, data, "r3", "root-3", "")
	if err := os.WriteFile(filepath.Join(bad, CheckpointFile), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LatestCheckpoint(data, "r3"); !errors.Is(err, ErrCorruptCheckpoint) ||
		!strings.Contains(err.Error(), filepath.Join(bad, CheckpointFile)) {
		t.Errorf("corrupt root: err = %v", err)
	}
	// A run with only children.
	saveAs(t, data, "r4", "w", "gone")
	if _, _, err := LatestCheckpoint(data, "r4"); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("no root: err = %v", err)
	}
}

func TestRemoveRun(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	root := saveAs(t, data, "r1", "root", "")
	child := saveAs(t, data, "r1", "c1", "root")
	other := saveAs(t, data, "r2", "root", "")
	// A spilled output file of the run is kept, with its directory.
	spill := filepath.Join(child, "spill-1.txt")
	if err := os.WriteFile(spill, []byte("out"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "."+CheckpointFile+".123.tmp"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := RemoveRun(data, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("root agent dir still there: %v", err)
	}
	if _, err := os.Stat(filepath.Join(child, CheckpointFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("child checkpoint still there: %v", err)
	}
	if _, err := os.Stat(spill); err != nil {
		t.Errorf("spill file removed: %v", err)
	}
	if _, err := LoadCheckpoint(other); err != nil {
		t.Errorf("another run's checkpoint was touched: %v", err)
	}
	if err := RemoveRun(data, "never"); err != nil {
		t.Errorf("RemoveRun of an unknown run: %v", err)
	}
}
