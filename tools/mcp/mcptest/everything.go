package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/troupe-ai/troupe/internal/peer"
)

// EverythingVersion is the version of the reference MCP server
// @modelcontextprotocol/server-everything that tests/run.sh installs
// into tests/.npm.
const EverythingVersion = "2026.8.31"

// EverythingTools are tools of server-everything the tests use.
const (
	EverythingEcho  = "echo"           // {message}: "Echo: <message>"
	EverythingSum   = "get-sum"        // {a, b}: "The sum of a and b is c."
	EverythingImage = "get-tiny-image" // an image
	EverythingEnv   = "get-env"        // the server's whole environment, as JSON
)

// Everything returns the command line that runs server-everything over
// stdio, or skips t, saying why, when Node or the package is missing.
func Everything(t testing.TB) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		peer.Missing(t, "node", "not installed: the tests against the reference MCP server @modelcontextprotocol/server-everything need Node.js and npm (tests/run.sh installs the server when they are present)")
	}
	root, err := repoRoot()
	if err != nil {
		peer.Missing(t, "server-everything", "cannot find the repository root for tests/.npm: %v", err)
	}
	entry := filepath.Join(root, "tests", ".npm", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		peer.Missing(t, "server-everything", "@modelcontextprotocol/server-everything is not installed in tests/.npm: run tests/run.sh, or npm install --prefix tests/.npm --no-save @modelcontextprotocol/server-everything@%s", EverythingVersion)
	}
	return []string{node, entry, "stdio"}
}

// repoRoot is the nearest directory above the working directory that
// holds tests/run.sh.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tests", "run.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// FilesystemTools are tools of the reference filesystem server
// @modelcontextprotocol/server-filesystem the tests use; a relative path
// is taken in its first allowed directory.
const (
	FilesystemWrite   = "write_file"               // {path, content}
	FilesystemRead    = "read_text_file"           // {path}
	FilesystemAllowed = "list_allowed_directories" // {}: "Allowed directories:\n<dir>..."
)

// Filesystem returns the command line that runs the reference filesystem
// server (@modelcontextprotocol/server-filesystem, the EverythingVersion
// tests/run.sh installs into tests/.npm) over stdio, serving the
// directories given after it; or skips t, saying why, when Node or the
// package is missing.
func Filesystem(t testing.TB, dirs ...string) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		peer.Missing(t, "node", "not installed: the tests against the reference MCP server @modelcontextprotocol/server-filesystem need Node.js and npm (tests/run.sh installs the server when they are present)")
	}
	root, err := repoRoot()
	if err != nil {
		peer.Missing(t, "server-filesystem", "cannot find the repository root for tests/.npm: %v", err)
	}
	entry := filepath.Join(root, "tests", ".npm", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		peer.Missing(t, "server-filesystem", "@modelcontextprotocol/server-filesystem is not installed in tests/.npm: run tests/run.sh, or npm install --prefix tests/.npm --no-save @modelcontextprotocol/server-filesystem@%s (with the other packages tests/run.sh names)", EverythingVersion)
	}
	return append([]string{node, entry}, dirs...)
}
