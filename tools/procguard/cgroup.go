package procguard

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupBase is this process's directory of command cgroups: a child of
// its own cgroup (cgroup v2), holding one cgroup per command.
type cgroupBase struct {
	dir string
	seq atomic.Int64
}

// newCgroupBase creates the base directory, or says why it cannot: no
// cgroup v2 mounted, our cgroup not writable, no cgroup.kill (Linux
// before 5.14).
func newCgroupBase() (*cgroupBase, error) {
	own, err := OwnCgroupDir()
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(own, fmt.Sprintf("troupe-%d-%s", os.Getpid(), hex.EncodeToString(b[:])))
	if strings.ContainsAny(dir, " \t\n") {
		return nil, fmt.Errorf("cgroup path %q holds blanks", dir)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cannot create a cgroup under %s: %w", own, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return nil, errors.New("cgroup.kill is missing (Linux older than 5.14)")
	}
	return &cgroupBase{dir: dir}, nil
}

// OwnCgroupDir is the directory of this process's cgroup v2.
func OwnCgroupDir() (string, error) {
	mount, root, err := Cgroup2Mount()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("read /proc/self/cgroup: %w", err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "0::"); ok {
			rel, ok := strings.CutPrefix(rest, root)
			if !ok {
				return "", fmt.Errorf("our cgroup %s is outside the mounted cgroup2 tree %s", rest, root)
			}
			return filepath.Join(mount, rel), nil
		}
	}
	return "", errors.New("this process is in no cgroup v2 (a cgroup v1 only system)")
}

// Cgroup2Mount finds where the cgroup v2 hierarchy is mounted (also in a
// hybrid layout, at /sys/fs/cgroup/unified) and the root it shows.
func Cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("read mountinfo: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root mountpoint options... - fstype source options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		fields := strings.Fields(pre)
		if len(fields) < 5 {
			continue
		}
		root := fields[3]
		if root == "/" {
			root = ""
		}
		return unescapeMount(fields[4]), root, nil
	}
	return "", "", errors.New("cgroup v2 is not mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a blank).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// child creates the cgroup of one command and opens it for
// CLONE_INTO_CGROUP.
func (b *cgroupBase) child() (*cgroupDir, error) {
	p := filepath.Join(b.dir, "c"+strconv.FormatInt(b.seq.Add(1), 10))
	if err := os.Mkdir(p, 0o755); err != nil {
		return nil, err
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(p)
		return nil, err
	}
	return &cgroupDir{path: p, fd: fd}, nil
}

// remove removes the base directory (its children must be gone).
func (b *cgroupBase) remove() error {
	if err := unix.Rmdir(b.dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove cgroup %s: %w", b.dir, err)
	}
	return nil
}

// cgroupDir is one command's cgroup.
type cgroupDir struct {
	path string
	fd   int
}

// members lists the processes in the cgroup.
func (d *cgroupDir) members() []int {
	data, err := os.ReadFile(filepath.Join(d.path, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for f := range bytes.FieldsSeq(data) {
		if pid, err := strconv.Atoi(string(f)); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// kill sends SIGKILL to every process in the cgroup, at once.
func (d *cgroupDir) kill() {
	_ = os.WriteFile(filepath.Join(d.path, "cgroup.kill"), []byte("1"), 0)
}

// populated reports whether any process is left in the cgroup.
func (d *cgroupDir) populated() bool {
	data, err := os.ReadFile(filepath.Join(d.path, "cgroup.events"))
	if err != nil {
		return false
	}
	return bytes.Contains(data, []byte("populated 1"))
}

// waitEmpty waits, at most d, for the cgroup to hold no process.
func (d *cgroupDir) waitEmpty(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	pause := 100 * time.Microsecond
	for d.populated() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause) // the kernel tells nothing else cheaply; back off
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}

// remove closes the cgroup's descriptor and removes it.
func (d *cgroupDir) remove() {
	if d.fd >= 0 {
		_ = unix.Close(d.fd)
		d.fd = -1
	}
	_ = unix.Rmdir(d.path)
}
