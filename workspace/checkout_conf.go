package workspace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// checkoutConfWhy says why the repository's configuration (as our git
// commands see it, read once per Repo) makes git's checkout differ from
// a plain write of each blob, or "" when it does not. Our commands run
// with core.autocrlf=false (gitConfig), which therefore never counts.
func (r *Repo) checkoutConfWhy(ctx context.Context) string {
	if r.unmodelled != "" {
		return r.unmodelled
	}
	conf, why := r.repoConfig(ctx)
	if why != "" {
		return why
	}
	return confWhy(conf)
}

// repoConfig is the repository's configuration as our git commands see
// it, read once per Repo with git config -z --list; why says why there
// is none (it could not be read).
func (r *Repo) repoConfig(ctx context.Context) (conf map[string]confValue, why string) {
	cs := &r.checkout
	cs.confOnce.Do(func() {
		out, err := r.g.run(ctx, nil, "config", "-z", "--list")
		if err != nil {
			cs.confWhy = "configuration unreadable: " + err.Error()
			return
		}
		cs.conf = parseConfigList(out)
	})
	return cs.conf, cs.confWhy
}

// parseConfigList reads `git config -z --list` output ("key\nvalue\0",
// or "key\0" for a key without a value) into each key's last value;
// keys as git prints them (section and name lower case).
func parseConfigList(out []byte) map[string]confValue {
	conf := map[string]confValue{}
	for rec := range strings.SplitSeq(string(out), "\x00") {
		if rec == "" {
			continue
		}
		key, val, has := strings.Cut(rec, "\n")
		conf[strings.ToLower(key)] = confValue{val: val, set: has}
	}
	return conf
}

// confValue is a configuration value; set is false for a key given
// without "=" (true as a boolean).
type confValue struct {
	val string
	set bool
}

// isTrue reports whether v is true as git reads a boolean.
func (v confValue) isTrue() bool {
	if !v.set {
		return true
	}
	switch strings.ToLower(v.val) {
	case "false", "no", "off", "0", "":
		return false
	}
	return true
}

// confWhy names the first setting in conf that changes what git writes
// on checkout, or "" when none does.
func confWhy(conf map[string]confValue) string {
	for key, v := range conf {
		switch {
		case strings.HasPrefix(key, "filter."):
			return "filter configured (" + key + ")"
		case key == "core.autocrlf" && v.isTrue():
			return "core.autocrlf"
		case key == "core.eol", key == "core.attributesfile":
			return key + " set"
		case key == "core.symlinks" && !v.isTrue():
			return "core.symlinks is false"
		case (key == "core.sparsecheckout" || key == "index.sparse" || key == "core.ignorecase" ||
			key == "extensions.worktreeconfig") && v.isTrue():
			return key + " is true"
		}
	}
	return ""
}

// attributesFileWhy names an attributes file outside the tree that git's
// checkout reads (the repository's info/attributes under its common git
// directory, the user's and the system's), or "" when there is none.
func attributesFileWhy(commonDir string) string {
	files := []string{filepath.Join(commonDir, "info", "attributes"), "/etc/gitattributes"}
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		files = append(files, filepath.Join(x, "git", "attributes"))
	} else if h := os.Getenv("HOME"); h != "" {
		files = append(files, filepath.Join(h, ".config", "git", "attributes"))
	}
	for _, f := range files {
		if _, err := os.Stat(f); err == nil {
			return "attributes file " + f
		}
	}
	return ""
}
