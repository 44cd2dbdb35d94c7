package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// versionLine is "NAME VERSION (commit C[, modified]) GO-VERSION": the
// version set at build time (-ldflags "-X main.version=..."), the VCS
// revision the go command stamped into the binary, and the Go toolchain.
func versionLine(name string) string {
	commit := buildCommit
	if bi, ok := debug.ReadBuildInfo(); ok && commit == "" {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			commit = rev
			if modified == "true" {
				commit += ", modified"
			}
		}
	}
	if commit == "" {
		commit = "unknown"
	}
	return fmt.Sprintf("%s %s (commit %s) %s", name, version, commit, runtime.Version())
}

// buildCommit may be set at build time (-ldflags "-X main.buildCommit=...")
// where the go command cannot stamp the revision (GOFLAGS=-buildvcs=false).
var buildCommit = ""
