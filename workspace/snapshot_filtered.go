package workspace

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
)

// A file that goes through a filter of the user's global config and was
// written in the second the user's index was (racily clean: just
// checked out or committed, as after git lfs track and git commit) is
// read again by the snapshot's git add, which runs no filter: it would
// take the file's smudged bytes as its blob, and a worker's edit of it
// could then not merge (checkFiltered). settleFiltered runs the user's
// filter, confined, over each such file the snapshot took differently
// from the base commit, and where its clean form is the base's blob,
// keeps that: the file had not changed. A file the user did change
// stays as git add took it (and its changes conflict with a reason, as
// before).
func (r *Repo) settleFiltered(ctx context.Context, idx, base string) error {
	if base == "" || len(r.conv.filters) == 0 || filterUnsupported() != "" {
		return nil
	}
	g := r.g.withIndex(idx)
	out, err := g.run(ctx, nil, "diff-index", "--cached", "-z", "--no-renames", "--raw", base)
	if err != nil {
		return err
	}
	old, mode := map[string]string{}, map[string]string{} // path → its base blob, its mode now
	var ask strings.Builder
	recs := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(recs); i += 2 {
		meta := bytes.Fields(recs[i])
		if len(meta) < 5 || string(meta[4]) != "M" || !regularMode(string(meta[0])) || !regularMode(string(meta[1])) {
			continue
		}
		p := string(recs[i+1])
		old[p], mode[p] = string(meta[2]), string(meta[1])
		ask.WriteString(p + "\x00")
	}
	if len(old) == 0 {
		return nil
	}
	attrs, err := r.g.run(ctx, []byte(ask.String()), "check-attr", "-z", "--stdin", "filter")
	if err != nil {
		return fmt.Errorf("read attributes: %w", err)
	}
	c := &converter{r: r, g: r.g, paths: map[string]bool{}, filtered: map[string]filterDriver{}, refused: map[string]string{}}
	var info bytes.Buffer
	f := strings.Split(string(attrs), "\x00")
	for i := 0; i+2 < len(f); i += 3 {
		p, name := f[i], f[i+2]
		if !r.conv.filters[name] || !r.conv.drivers[name].any() {
			continue
		}
		c.filtered[p] = r.conv.drivers[name]
		if same, err := r.cleansTo(ctx, c, p, old[p]); err != nil {
			return err
		} else if same {
			fmt.Fprintf(&info, "%s %s\t%s\x00", mode[p], old[p], p)
		}
	}
	if info.Len() == 0 {
		return nil
	}
	_, err = g.run(ctx, info.Bytes(), "update-index", "-z", "--index-info")
	return err
}

// regularMode reports whether mode (a raw diff's, the leading colon
// dropped) is a regular file's.
func regularMode(mode string) bool {
	mode = strings.TrimPrefix(mode, ":")
	return mode == "100644" || mode == "100755"
}

// cleansTo reports whether the work tree's file at path, through c's
// filter (confined) and git's clean conversion, is the blob want. A
// file over the Repo's limit, or one that cannot be read, is not.
func (r *Repo) cleansTo(ctx context.Context, c *converter, path, want string) (bool, error) {
	root, err := os.OpenRoot(r.at)
	if err != nil {
		return false, err
	}
	defer root.Close()
	file, err := root.Open(path)
	if err != nil {
		return false, nil
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() > r.maxChange() {
		return false, nil
	}
	id, err := c.cleanID(ctx, path, func(w io.Writer) error {
		if _, err := file.Seek(0, io.SeekStart); err != nil { // read again when the filter leaves it as it is
			return err
		}
		return copyExactly(w, file, st.Size())
	})
	if err != nil {
		return false, nil // the snapshot keeps what git add took; the land says why
	}
	return id == want, nil
}
