package workspace

import (
	"context"
	"errors"
	"fmt"
	"runtime"
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
// checks out or adds a file (the Repo's configuration, read once; see
// checkout_conf.go) and no attributes file outside the tree.
func (r *Repo) goCaptureOK(ctx context.Context) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: stat data on %s", errConfig, runtime.GOOS)
	}
	conf, why := r.repoConfig(ctx)
	if r.unmodelled != "" {
		why = r.unmodelled
	}
	if why == "" {
		why = confWhy(conf)
	}
	if why == "" {
		why = addConfWhy(conf)
	}
	if why != "" {
		return fmt.Errorf("%w: %s", errConfig, why)
	}
	if why := attributesFileWhy(r.home.dir); why != "" {
		return fmt.Errorf("%w: %s", errAttributes, why)
	}
	return nil
}

// addConfWhy names a setting, beyond those confWhy names, that changes
// how git adds files: executable bits ignored (core.filemode false),
// names normalised (core.precomposeUnicode), or permissions of the
// objects it writes (core.sharedRepository); "" when none is set.
func addConfWhy(conf map[string]confValue) string {
	if v, ok := conf["core.filemode"]; ok && !v.isTrue() {
		return "core.filemode is false"
	}
	if v, ok := conf["core.precomposeunicode"]; ok && v.isTrue() {
		return "core.precomposeunicode is true"
	}
	if v, ok := conf["core.sharedrepository"]; ok && (!v.set || (v.val != "" && v.val != "false" && v.val != "umask")) {
		return "core.sharedrepository set"
	}
	return ""
}
