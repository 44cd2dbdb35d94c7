package tools

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/internal/statedir"
)

// ArtifactScheme starts the handle of an output kept in the run's artifact
// store: artifact://<run>/<name>.
const ArtifactScheme = "artifact://"

// ArtifactStore keeps spilled outputs where every process of a run can
// read them (a JetStream object store in a distributed run). Put returns
// the handle to show the model; Get writes a handle's content to w.
type ArtifactStore interface {
	Put(ctx context.Context, name string, r io.Reader) (handle string, err error)
	Get(ctx context.Context, handle string, w io.Writer) error
}

// IsArtifact reports whether a path argument is an artifact handle.
func IsArtifact(path string) bool { return strings.HasPrefix(path, ArtifactScheme) }

// localArtifact fetches an artifact into the session's data directory
// (once) and returns its workspace path, so read_file and grep read it like
// any file, under the same confinement.
func (s *Session) localArtifact(ctx context.Context, handle string) (string, error) {
	if s.Artifacts == nil {
		return "", fmt.Errorf("%s: this run keeps no artifacts (they need a NATS server)", handle)
	}
	name := strings.TrimPrefix(handle, ArtifactScheme)
	if name == "" || strings.Contains(name, "..") || strings.ContainsAny(name, "\\\x00") {
		return "", fmt.Errorf("%s: not an artifact handle", handle)
	}
	dataDir := s.Config.DataDir
	if dataDir == "" {
		dataDir = filepath.Join(s.Workspace.Root(), ".troupe")
	}
	local := filepath.Join(dataDir, "artifacts", filepath.FromSlash(name))
	d, err := s.dataRoot(dataDir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", handle, err)
	}
	defer d.Close()
	rel := filepath.Join("artifacts", filepath.FromSlash(name))
	if _, err := d.Stat(rel); err != nil {
		dir, err := statedir.OpenDir(d, filepath.Dir(rel), 0o700)
		if err != nil {
			return "", fmt.Errorf("%s: %w", handle, err)
		}
		defer dir.Close()
		err = writeVia(dir, filepath.Base(rel), 0o600, func(w io.Writer) error { return s.Artifacts.Get(ctx, handle, w) })
		if err != nil {
			return "", fmt.Errorf("%s: %w", handle, err)
		}
	}
	return s.Workspace.Display(local), nil
}

// dataRoot opens the run's data folder (creating it), never following a
// link on the way when it lies inside the workspace, so nothing an agent
// planted sends a fetched artifact elsewhere.
func (s *Session) dataRoot(dataDir string) (*os.Root, error) {
	return statedir.OpenData(s.Workspace.Root(), dataDir)
}
