package statedir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// legacyTrees are the folders an older version kept in <workspace>/.troupe
// that now live in the state directory: checkpoints, journals and kept
// patches (runs), task records (remote).
var legacyTrees = []string{"runs", "remote"}

// natsNoted marks, in a state directory, that the user was told about an
// older version's NATS folder in the workspace.
const natsNoted = ".legacy-nats-noted"

// Migrate moves what an older version kept in the workspace's data folder
// (dataDir, <workspace>/.troupe) and troupe now keeps in stateDir: the
// checkpoints, journals and kept patches of runs/ and the task records of
// remote/, so that resume finds them. It reads that agent-writable tree
// without following a link: links and special files are left where they
// are, and a file stateDir already holds is not replaced. An older
// version's NATS store and credentials (dataDir/nats) are not moved: they
// were readable by agents, so the embedded server makes new ones in
// stateDir; the user is told once. Migrate returns one line per thing
// done, for the user.
func Migrate(workspace, dataDir, stateDir string) ([]string, error) {
	rel, ok := beneath(workspace, dataDir)
	if !ok {
		return nil, nil // a data folder outside the workspace: nothing of ours there to move
	}
	ws, err := os.OpenRoot(workspace)
	if err != nil {
		return nil, fmt.Errorf("migrate state: %w", err)
	}
	defer ws.Close()
	data, err := OpenDir(ws, rel, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("migrate state: %w", err)
	}
	defer data.Close()
	var lines []string
	for _, tree := range legacyTrees {
		n, err := moveTree(data, tree, filepath.Join(stateDir, tree))
		if err != nil {
			return lines, fmt.Errorf("migrate state: %s: %w", filepath.Join(dataDir, tree), err)
		}
		if n > 0 {
			lines = append(lines, fmt.Sprintf("troupe: moved %d file(s) of an older version from %s to %s (troupe keeps its own state outside the workspace now)",
				n, filepath.Join(dataDir, tree), filepath.Join(stateDir, tree)))
		}
	}
	if fi, err := data.Lstat("nats"); err == nil && fi.IsDir() {
		marker := filepath.Join(stateDir, natsNoted)
		if _, err := os.Stat(marker); errors.Is(err, fs.ErrNotExist) {
			lines = append(lines, fmt.Sprintf("troupe: %s (an older version's NATS store and credentials, which agents could read) is no longer used: "+
				"the embedded server keeps them in %s now; remove it (rm -r %s)", filepath.Join(dataDir, "nats"), filepath.Join(stateDir, "nats"), filepath.Join(dataDir, "nats")))
			if err := Make(stateDir); err == nil {
				_ = os.WriteFile(marker, nil, 0o600)
			}
		}
	}
	return lines, nil
}

// moveTree moves the regular files beneath name of src into dst (made
// 0700, files 0600) and removes the folders it emptied; it returns how
// many files it moved. A missing name is nothing to move.
func moveTree(src *os.Root, name, dst string) (int, error) {
	d, err := OpenDir(src, name, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := moveDir(d, dst)
	d.Close()
	if err == nil {
		_ = src.Remove(name) // only when emptied
	}
	return n, err
}

func moveDir(src *os.Root, dst string) (int, error) {
	f, err := src.Open(".")
	if err != nil {
		return 0, err
	}
	entries, err := f.ReadDir(-1)
	f.Close()
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, e := range entries {
		switch {
		case e.Type().IsDir():
			n, err := moveTree(src, e.Name(), filepath.Join(dst, e.Name()))
			moved += n
			if err != nil {
				return moved, err
			}
		case e.Type().IsRegular():
			ok, err := moveFile(src, e.Name(), dst)
			if err != nil {
				return moved, err
			}
			if ok {
				moved++
			}
		}
	}
	return moved, nil
}

// moveFile copies the regular file name of src into dst and removes it;
// false when dst already had one by that name (both are left) or name
// turned out not to be a regular file.
func moveFile(src *os.Root, name, dst string) (bool, error) {
	lfi, err := src.Lstat(name)
	if err != nil || !lfi.Mode().IsRegular() {
		return false, nil
	}
	in, err := src.Open(name)
	if err != nil {
		return false, err
	}
	defer in.Close()
	if fi, err := in.Stat(); err != nil || !os.SameFile(lfi, fi) {
		return false, nil // swapped meanwhile: left where it is
	}
	if err := Make(dst); err != nil {
		return false, err
	}
	out, err := os.OpenFile(filepath.Join(dst, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return false, err
	}
	if err := out.Close(); err != nil {
		return false, err
	}
	return true, src.Remove(name)
}
