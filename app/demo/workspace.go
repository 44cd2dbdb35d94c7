package demo

import (
	"errors"
	"fmt"
	"github.com/troupe-ai/troupe/app/runner"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/troupe-ai/troupe/actors"
)

// demoWorkspace decides where the demo works. With no directory it makes a
// temporary one; with one it works on a copy of it, or on the directory
// itself when inPlace. A directory that does not exist is a usage error.
// cleanup removes what the demo made unless keep.
func demoWorkspace(dir string, inPlace, keep bool, stderr io.Writer) (ws string, cleanup func(), err error) {
	cleanup = func() {}
	if dir == "" {
		if inPlace {
			return "", cleanup, runner.Usage("demo: --in-place needs --workspace DIR")
		}
		tmp, err := os.MkdirTemp("", "troupe-demo-")
		if err != nil {
			return "", cleanup, err
		}
		return tmp, removeUnless(tmp, keep, stderr), nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", cleanup, runner.Usage("demo: --workspace %s: %v", dir, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", cleanup, runner.Usage("demo: --workspace %s does not exist; create it first, or leave --workspace out to use a temporary copy of the sample repository", dir)
	case err != nil:
		return "", cleanup, runner.Usage("demo: --workspace %s: %v", dir, err)
	case !st.IsDir():
		return "", cleanup, runner.Usage("demo: --workspace %s is not a directory", dir)
	}
	if inPlace {
		// The scripted agents read and edit the sample's files (the worker
		// edits discount.go): in place, they must all be the demo's own.
		clash, err := existingDemoFiles(abs)
		if err != nil {
			return "", cleanup, err
		}
		if len(clash) > 0 {
			return "", cleanup, runner.Usage("demo --in-place: %s already has %s: the demo creates the sample repository's files and its scripted agents read and edit them; "+
				"nothing was changed. Use a directory without them, or leave out --in-place to work on a copy of %s", dir, strings.Join(clash, ", "), dir)
		}
		fmt.Fprintf(stderr, "demo: working in %s itself (--in-place); the demo adds its sample files there and changes no others\n", abs)
		return abs, cleanup, nil
	}
	tmp, err := os.MkdirTemp("", "troupe-demo-")
	if err != nil {
		return "", cleanup, err
	}
	if err := copyTree(abs, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", cleanup, fmt.Errorf("demo: copy %s: %w", abs, err)
	}
	fmt.Fprintf(stderr, "demo: working on a copy of %s in %s; %s itself is not touched (--in-place to work there)\n", abs, tmp, abs)
	return tmp, removeUnless(tmp, keep, stderr), nil
}

// removeUnless removes the temporary workspace dir, and the state
// directory its runs made, unless keep.
func removeUnless(dir string, keep bool, stderr io.Writer) func() {
	return func() {
		if keep {
			fmt.Fprintf(stderr, "demo: the workspace is kept in %s\n", dir)
			return
		}
		if state, err := actors.StateDir(dir); err == nil {
			os.RemoveAll(state)
		}
		os.RemoveAll(dir)
	}
}

// copyTree copies the directories, regular files and symbolic links (as
// links, never followed) under src into dst, leaving out .git and .troupe.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".troupe") {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.Mkdir(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target)
		}
		return nil // sockets, pipes and devices are not copied
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	st, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, st.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
