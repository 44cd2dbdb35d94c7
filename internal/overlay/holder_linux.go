package overlay

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// holderArg0 marks a re-execution of our binary as a holder.
const holderArg0 = "troupe-overlay-holder"

// request is one line a holder reads: mount an overlay of Lower with
// Upper and Work at Target, or (Op "umount") unmount Target.
type request struct {
	Op     string `json:"op"`
	Lower  string `json:"lower,omitempty"`
	Upper  string `json:"upper,omitempty"`
	Work   string `json:"work,omitempty"`
	Target string `json:"target"`
}

// reply is a holder's answer to a request: Err empty on success.
type reply struct {
	Err string `json:"err,omitempty"`
}

// Holder is a running holder process: its namespaces hold the mounts.
// It is safe for concurrent use.
type Holder struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	dead   error // why requests fail from now on
	pid    int
	stop   chan struct{} // closed by Close: the thread that started the holder ends
	closed bool
}

// Start starts a holder, a child of this process that ends with it.
func Start() (*Holder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	cmd := &exec.Cmd{Path: exe, Args: []string{holderArg0}, Env: []string{}, Stderr: os.Stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
		Setpgid:     true,
	}
	if os.Getuid() != 0 {
		// Mapped to itself, a user other than root keeps its
		// capabilities in the new namespace across exec only as ambient ones.
		cmd.SysProcAttr.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN}
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	stop := make(chan struct{})
	if err := startOnOwnThread(cmd, stop); err != nil {
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	h := &Holder{cmd: cmd, in: in, out: bufio.NewReader(out), pid: cmd.Process.Pid, stop: stop}
	// The holder says it is ready once it runs in its namespaces.
	if err := h.answer(); err != nil {
		h.Close()
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	return h, nil
}

// startOnOwnThread starts cmd from an OS thread kept for it until stop
// is closed (the thread then ends, and the holder if still there):
// Pdeathsig fires when the thread that forked the child
// exits, and Go ends a thread whose goroutine exits locked to it (the
// sandbox's prepared threads do), which would kill the holder with it.
func startOnOwnThread(cmd *exec.Cmd, stop chan struct{}) error {
	done := make(chan error)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		err := cmd.Start()
		done <- err
		if err == nil {
			<-stop
		}
	}()
	return <-done
}

// Pid is the holder's process ID.
func (h *Holder) Pid() int { return h.pid }

// View is the path through which this process reaches target as the
// holder's namespace has it: its merged view when an overlay is mounted
// there.
func (h *Holder) View(target string) string {
	return "/proc/" + strconv.Itoa(h.pid) + "/root" + target
}

// Mount mounts an overlay of lower, with upper and work (empty
// directories on lower's filesystem), at target, all absolute paths
// without commas, colons or backslashes (the mount options' separators).
func (h *Holder) Mount(lower, upper, work, target string) error {
	for _, p := range []string{lower, upper, work, target} {
		if !strings.HasPrefix(p, "/") || strings.ContainsAny(p, ",:\\\n") {
			return fmt.Errorf("overlay mount: path %q cannot be a mount option", p)
		}
	}
	return h.ask(request{Op: "mount", Lower: lower, Upper: upper, Work: work, Target: target})
}

// Unmount unmounts target (lazily: a process still in it keeps its view
// until it leaves).
func (h *Holder) Unmount(target string) error {
	return h.ask(request{Op: "umount", Target: target})
}

// ask sends one request and waits for its answer.
func (h *Holder) ask(req request) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead != nil {
		return h.dead
	}
	if _, err := h.in.Write(append(b, '\n')); err != nil {
		h.dead = fmt.Errorf("overlay holder: %w", err)
		return h.dead
	}
	return h.answer()
}

// answer reads one reply.
func (h *Holder) answer() error {
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		h.dead = fmt.Errorf("overlay holder ended: %w", err)
		return h.dead
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		h.dead = fmt.Errorf("overlay holder: bad reply %q", line)
		return h.dead
	}
	if rep.Err != "" {
		return errors.New(rep.Err)
	}
	return nil
}

// Close ends the holder: its mounts vanish.
func (h *Holder) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.closed = true
	if h.dead == nil {
		h.dead = errors.New("overlay holder closed")
	}
	_ = h.in.Close()
	err := h.cmd.Wait()
	close(h.stop)
	if err != nil {
		_ = h.cmd.Process.Kill()
	}
	return nil
}

// MaybeRunHolder runs the holder and never returns when this process was
// started as one (by Start); otherwise it returns at once. Call it first
// thing in main of every program that makes overlay worktrees, and in
// TestMain of their tests.
func MaybeRunHolder() {
	if len(os.Args) != 1 || os.Args[0] != holderArg0 {
		return
	}
	os.Exit(hold(os.Stdin, os.Stdout))
}

// hold serves requests read from in, answering on out, until in ends.
func hold(in io.Reader, out io.Writer) int {
	enc := json.NewEncoder(out)
	// Mounts made here must not propagate back to the parent's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		_ = enc.Encode(reply{Err: "make mounts private: " + err.Error()})
		return 1
	}
	if err := enc.Encode(reply{}); err != nil {
		return 1
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<10)
	for sc.Scan() {
		var req request
		rep := reply{}
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			rep.Err = "bad request: " + err.Error()
		} else if err := serve(req); err != nil {
			rep.Err = err.Error()
		}
		if err := enc.Encode(rep); err != nil {
			return 1
		}
	}
	return 0
}

// serve carries out one request.
func serve(req request) error {
	switch req.Op {
	case "mount":
		opts := "lowerdir=" + req.Lower + ",upperdir=" + req.Upper + ",workdir=" + req.Work + ",userxattr"
		if err := unix.Mount("overlay", req.Target, "overlay", unix.MS_NODEV|unix.MS_NOSUID, opts); err != nil {
			return fmt.Errorf("mount overlay at %s: %w", req.Target, err)
		}
	case "umount":
		if err := unix.Unmount(req.Target, unix.MNT_DETACH); err != nil && err != unix.EINVAL { // EINVAL: not mounted
			return fmt.Errorf("unmount %s: %w", req.Target, err)
		}
	default:
		return fmt.Errorf("unknown request %q", req.Op)
	}
	return nil
}
