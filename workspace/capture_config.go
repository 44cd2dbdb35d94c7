package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Reasons a capture is left to git.
var (
	// errAttributes: attributes may change how git adds a file.
	errAttributes = errors.New("git attributes in use")
	// errConfig: the repository's configuration changes how git adds files.
	errConfig = errors.New("configuration changes how files are added")
)

// goCaptureOK reports (nil) whether the repository lets worktrees be
// captured and restored in Go: no configuration that changes how git
// adds a file (read once per Repo with git config, whose view includes
// our -c flags) and no info/attributes file.
func (r *Repo) goCaptureOK(ctx context.Context) error {
	r.goConfOnce.Do(func() {
		if runtime.GOOS != "linux" {
			r.goConfErr = fmt.Errorf("%w: stat data on %s", errConfig, runtime.GOOS)
			return
		}
		out, err := r.g.run(ctx, nil, "config", "-z", "--list")
		if err != nil {
			r.goConfErr = err
			return
		}
		r.goConfErr = checkAddConfig(out)
	})
	if r.goConfErr != nil {
		return r.goConfErr
	}
	if _, err := os.Lstat(filepath.Join(r.lockDir, "info", "attributes")); err == nil {
		return fmt.Errorf("%w: info/attributes", errAttributes)
	}
	return nil
}

// checkAddConfig reads `git config -z --list` output ("key\nvalue\0",
// or "key\0" for a key set without a value) and returns errConfig when
// a setting changes how files are added: core.filemode, core.symlinks
// or core.autocrlf not at their defaults, core.ignorecase,
// core.sparseCheckout, core.precomposeUnicode, core.sharedRepository,
// core.attributesFile, per-worktree configuration, or any filter.
func checkAddConfig(out []byte) error {
	last := map[string]string{}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		key, val, hasVal := strings.Cut(string(rec), "\n")
		key = strings.ToLower(key)
		if !hasVal {
			val = "true"
		}
		if strings.HasPrefix(key, "filter.") {
			return fmt.Errorf("%w: %s", errConfig, key)
		}
		last[key] = val
	}
	want := map[string]bool{ // setting → the value the Go path needs
		"core.filemode": true, "core.symlinks": true, "core.autocrlf": false, "core.ignorecase": false,
		"core.sparsecheckout": false, "core.precomposeunicode": false, "extensions.worktreeconfig": false,
	}
	for key, need := range want {
		if val, ok := last[key]; ok && gitBool(val) != need {
			return fmt.Errorf("%w: %s=%s", errConfig, key, val)
		}
	}
	for _, key := range []string{"core.sharedrepository", "core.attributesfile"} {
		if val, ok := last[key]; ok && val != "" {
			return fmt.Errorf("%w: %s=%s", errConfig, key, val)
		}
	}
	return nil
}

// gitBool reads a git boolean; anything but a false spelling is true
// (core.autocrlf=input, which is not false, counts as true).
func gitBool(v string) bool {
	switch strings.ToLower(v) {
	case "false", "no", "off", "0", "":
		return false
	}
	return true
}
