package convo

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// LatestCheckpoint finds the root agent's checkpoint (the one without a
// parent) of a run under dataDir and returns it with its directory. With
// run empty it takes the run whose checkpoints were written last. A corrupt
// child checkpoint does not hide the root's; when no root checkpoint can be
// read the error names every file that failed (ErrCorruptCheckpoint), or is
// ErrNoCheckpoint when there is none.
func LatestCheckpoint(dataDir, run string) (*Checkpoint, string, error) {
	if run == "" {
		r, err := latestRun(dataDir)
		if err != nil {
			return nil, "", err
		}
		run = r
	}
	rd, err := RunDir(dataDir, run)
	if err != nil {
		return nil, "", err
	}
	files, err := filepath.Glob(filepath.Join(rd, "*", CheckpointFile))
	if err != nil {
		return nil, "", fmt.Errorf("latest checkpoint: %w", err)
	}
	var best *Checkpoint
	var bestDir string
	var errs []error
	for _, f := range files {
		dir := filepath.Dir(f)
		cp, err := LoadCheckpoint(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cp.Parent == "" && (best == nil || cp.SavedAt.After(best.SavedAt)) {
			best, bestDir = cp, dir
		}
	}
	if best != nil {
		return best, bestDir, nil
	}
	if len(errs) > 0 {
		return nil, "", fmt.Errorf("run %s: no readable root checkpoint: %w", run, errors.Join(errs...))
	}
	return nil, "", fmt.Errorf("%w: run %s has no root checkpoint under %s", ErrNoCheckpoint, run, rd)
}

// latestRun is the run under dataDir/runs with the most recently modified
// checkpoint file or journal.
func latestRun(dataDir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dataDir, "runs", "*", "*", CheckpointFile))
	if err != nil {
		return "", fmt.Errorf("latest checkpoint: %w", err)
	}
	var run string
	var newest time.Time
	for _, f := range files {
		fi, err := os.Stat(f)
		if err != nil {
			continue // removed meanwhile
		}
		mod := fi.ModTime()
		if ji, err := os.Stat(filepath.Join(filepath.Dir(f), JournalFile)); err == nil && ji.ModTime().After(mod) {
			mod = ji.ModTime()
		}
		if run == "" || mod.After(newest) {
			run, newest = filepath.Base(filepath.Dir(filepath.Dir(f))), mod
		}
	}
	if run == "" {
		return "", fmt.Errorf("%w: no run under %s has a checkpoint", ErrNoCheckpoint, filepath.Join(dataDir, "runs"))
	}
	return run, nil
}

// RemoveRun deletes the checkpoints of a run (after it succeeded): each
// agent's checkpoint.json, journal and leftover temporary files, then the agent and
// run directories if that left them empty. Other files of the run (spilled
// tool output) are kept. A run without checkpoints is not an error.
func RemoveRun(dataDir, run string) error {
	rd, err := RunDir(dataDir, run)
	if err != nil {
		return err
	}
	agents, err := os.ReadDir(rd)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove run %s: %w", run, err)
	}
	var errs []error
	for _, a := range agents {
		if !a.IsDir() {
			continue
		}
		dir := filepath.Join(rd, a.Name())
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			n := e.Name()
			if isStoreFile(n) {
				if err := os.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
			}
		}
		_ = os.Remove(dir) // only succeeds when empty
	}
	_ = os.Remove(rd)
	if len(errs) > 0 {
		return fmt.Errorf("remove run %s: %w", run, errors.Join(errs...))
	}
	return nil
}
