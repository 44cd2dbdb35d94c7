package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

// A file's form on disk may differ from its blob: git converts line
// endings (the eol and text attributes, core.autocrlf, core.eol), the
// ident attribute, a working-tree-encoding, and runs clean and smudge
// filters. A merge compares and merges blobs (the object domain), so
// where any of that applies to a changed path the workspace's file is
// read through git's clean rules (git hash-object --path: the blob git
// add would make of it) and what the merge writes through git's
// checkout conversion (git cat-file --filters --path: the bytes git
// checkout would write), then written by troupe, symlink-safe, all or
// nothing (land.go). Elsewhere a file's bytes are its blob, and no git
// process starts.
//
// What decides: the attributes of the path (every .gitattributes of the
// work tree, the repository's info/attributes as the home mirrors it,
// the user's global attributes file), and of configuration only the
// user's global config (trusted: the user's own) and the few plain keys
// the home copies of the repository's (core.eol...): core.autocrlf and
// core.eol come from the user's global config. Filters: a filter
// attribute naming a driver of the user's global config is a program
// troupe runs only in the OS sandbox (filter_confined.go); where it
// cannot, that file conflicts with a reason that says so and the
// changeset is kept as a patch. A driver defined nowhere trusted (say, only in the
// repository's own .git/config, which an agent may write) does not
// exist for troupe's git, which then takes the file as git does a
// filter without a driver: as it is.

// convAttrs are the attributes that make git convert a file.
var convAttrs = []string{"text", "eol", "crlf", "filter", "ident", "working-tree-encoding"}

// userConv is what of the user's global config changes how files are
// converted: core.autocrlf, core.eol, and the filter drivers it defines.
type userConv struct {
	conf    []string                // -c flags for core.autocrlf and core.eol
	filters map[string]bool         // names of the drivers with a clean, smudge or process command
	drivers map[string]filterDriver // the drivers' clean and smudge commands (filter_confined.go)
}

// readUserConv reads the user's global config (includes followed) for
// userConv. Reading config runs nothing.
func (r *Repo) readUserConv(ctx context.Context) userConv {
	g := r.g
	g.userGlobal = true
	uc := userConv{filters: map[string]bool{}, drivers: map[string]filterDriver{}}
	out, code, err := g.runCode(ctx, nil, "config", "--global", "--includes", "-z", "--list")
	if err != nil || code != 0 {
		return uc
	}
	conf := parseConfigList(out)
	for _, key := range []string{"core.autocrlf", "core.eol"} {
		if v, ok := conf[key]; ok && plainValue().MatchString(v.val) {
			val := v.val
			if !v.set {
				val = "true"
			}
			uc.conf = append(uc.conf, "-c", key+"="+val)
		}
	}
	for key := range conf {
		rest, ok := strings.CutPrefix(key, "filter.")
		if !ok {
			continue
		}
		i := strings.LastIndexByte(rest, '.')
		if i > 0 && slices.Contains([]string{"clean", "smudge", "process"}, rest[i+1:]) {
			uc.filters[rest[:i]] = true
		}
	}
	for name := range uc.filters {
		d := filterDriver{name: name, clean: conf["filter."+name+".clean"].val, smudge: conf["filter."+name+".smudge"].val,
			process: conf["filter."+name+".process"].val}
		if req, ok := conf["filter."+name+".required"]; ok {
			d.required = !req.set || slices.Contains([]string{"true", "yes", "on", "1"}, strings.ToLower(req.val))
		}
		uc.drivers[name] = d
	}
	return uc
}

// converter converts the changed paths of one merge whose form on disk
// may differ from their blobs.
type converter struct {
	r        *Repo
	g        git                     // git in the home with the work tree (the user's autocrlf and eol)
	paths    map[string]bool         // the paths git converts
	filtered map[string]filterDriver // path → the user's filter it goes through, run confined
	refused  map[string]string       // path → why its conversion is refused (a filter)
	at       string                  // where its filters run ("": the Repo's work tree)
	viewOnly bool                    // at is an overlay worktree's view: its filters run in their private directory
}

// converter is the converter of entries' paths, or nil when no path
// converts (no attribute, no configuration says so).
func (r *Repo) converter(ctx context.Context, top *dirFD, entries []entry) (*converter, error) {
	uc := r.conv
	conf, _ := r.repoConfig(ctx)
	_, repoEOL := conf["core.eol"]
	if len(uc.conf) == 0 && !repoEOL && !r.attributesMayApply(top, entries) {
		return nil, nil
	}
	c := &converter{r: r, g: r.g, paths: map[string]bool{}, filtered: map[string]filterDriver{}, refused: map[string]string{}}
	var in strings.Builder
	for _, e := range entries {
		in.WriteString(e.path + "\x00")
	}
	out, err := c.g.run(ctx, []byte(in.String()), append([]string{"check-attr", "-z", "--stdin"}, convAttrs...)...)
	if err != nil {
		return nil, fmt.Errorf("read attributes: %w", err)
	}
	f := strings.Split(string(out), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		path, attr, val := f[i], f[i+1], f[i+2]
		if val == "unspecified" || (attr == "filter" && !uc.filters[val]) {
			continue
		}
		c.paths[path] = true
		if attr == "filter" {
			c.filter(path, val, uc.drivers[val])
		}
	}
	if len(uc.conf) > 0 || repoEOL {
		for _, e := range entries {
			c.paths[e.path] = true
		}
	}
	return c, nil
}

// filter records that path goes through the user's filter driver d
// (called name): run confined, or refused with a reason when it has
// no command or the sandbox cannot be enforced here.
func (c *converter) filter(path, name string, d filterDriver) {
	why := ""
	switch {
	case d.clean == "" && d.smudge == "" && d.process == "":
		why = "it has no clean, smudge or process command"
	default:
		if u := filterUnsupported(); u != "" {
			why = "troupe runs it only in the sandbox, which this machine cannot enforce (" + u + ")"
		}
	}
	if why != "" {
		c.refused[path] = path + " goes through the filter " + name + " of your git config: " + why + "; its changes are kept as a patch"
		return
	}
	c.filtered[path] = d
}

// attributesMayApply reports whether an attributes file could name one
// of entries' paths: a .gitattributes among them or in a directory
// above one in the work tree, the repository's info/attributes, or a
// global or system attributes file.
func (r *Repo) attributesMayApply(top *dirFD, entries []entry) bool {
	if r.common != "" && attributesFileWhy(r.common) != "" {
		return true
	}
	if r.common == "" && attributesFileWhy(r.home.dir) != "" {
		return true
	}
	seen := map[string]bool{}
	for _, e := range entries {
		dir, name := splitPath(e.path)
		if name == ".gitattributes" {
			return true
		}
		for !seen[dir] {
			seen[dir] = true
			if d, err := top.sub(dir, false); err == nil {
				_, err := d.lstat(".gitattributes")
				d.close()
				if !errors.Is(err, fs.ErrNotExist) {
					return true
				}
			}
			if dir == "." {
				break
			}
			dir, _ = splitPath(dir)
		}
	}
	return false
}

// converts reports whether git converts path (c may be nil).
func (c *converter) converts(path string) bool { return c != nil && c.paths[path] }

// refusedWhy is why path's conversion is refused, or "".
func (c *converter) refusedWhy(path string) string {
	if c == nil {
		return ""
	}
	return c.refused[path]
}

// clean is the blob git add would make of data at path (cleanID),
// read back: for a file small enough to hold.
func (c *converter) clean(ctx context.Context, path string, data []byte) ([]byte, error) {
	id, err := c.cleanID(ctx, path, patchBytes(data))
	if err != nil {
		return nil, err
	}
	_, blob, err := c.r.objects().read(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read %s as git adds it: %w", path, err)
	}
	return blob, nil
}

// smudge is what git checkout writes at path for the blob data
// (smudgeTo), for a file small enough to hold: git hash-object writes
// the blob as it is first.
func (c *converter) smudge(ctx context.Context, path string, data []byte) ([]byte, error) {
	out, err := c.g.run(ctx, data, "hash-object", "-w", "--stdin")
	if err != nil {
		return nil, fmt.Errorf("write %s as git checks it out: %w", path, err)
	}
	var buf bytes.Buffer
	if err := c.smudgeTo(ctx, path, strings.TrimSpace(string(out)), &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
