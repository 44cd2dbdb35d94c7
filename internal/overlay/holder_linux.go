package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/procsec"
)

// holderArg0 marks a re-execution of our binary as a holder.
const holderArg0 = "troupe-overlay-holder"

// request is one message a holder reads: mount an overlay of Lower with
// Upper and Work at Target, each a directory below Root (Lower below
// LowerRoot when that is set; relative paths, opened by the holder
// beneath their root without following a symbolic link); or (Op "umount") unmount the mount whose root the descriptor
// sent with the message is.
type request struct {
	Op        string `json:"op"`
	Root      string `json:"root,omitempty"`
	LowerRoot string `json:"lowerRoot,omitempty"`
	Lower     string `json:"lower,omitempty"`
	Upper     string `json:"upper,omitempty"`
	Work      string `json:"work,omitempty"`
	Target    string `json:"target,omitempty"`
}

// reply is a holder's answer to a request: Err empty on success; a
// mount's answer carries the mount's root directory as a descriptor.
type reply struct {
	Err string `json:"err,omitempty"`
}

// ErrNoUserNamespaces says this system does not let this process make a
// user namespace, which a holder needs.
var ErrNoUserNamespaces = errors.New("this system does not let this user make user namespaces " +
	"(user.max_user_namespaces is 0 or used up, kernel.unprivileged_userns_clone is 0, " +
	"or a security module such as AppArmor's restrict_unprivileged_userns forbids them)")

// holderCaps are the capabilities a holder started by a user other than
// root keeps in its namespaces (see Start).
var holderCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH, unix.CAP_FOWNER,
	unix.CAP_CHOWN, unix.CAP_MKNOD}

// Holder is a running holder process: its namespaces hold the mounts.
// It is safe for concurrent use.
type Holder struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	sock   int   // our end of the holder's socket (its stdin): requests out, replies in
	dead   error // why requests fail from now on
	pid    int
	stop   chan struct{} // closed by Close: the thread that started the holder ends
	closed bool

	roMu     sync.Mutex
	readOnly map[string]bool // directories made read-only in its namespace (ReadOnly)
}

// Start starts a holder, a child of this process that ends with it.
func Start() (*Holder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	// A datagram socket pair: one message a request or a reply, a
	// descriptor riding with it.
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	theirs := os.NewFile(uintptr(fds[1]), "overlay-holder")
	defer theirs.Close()
	cmd := &exec.Cmd{Path: exe, Args: []string{holderArg0}, Env: []string{}, Stdin: theirs, Stderr: os.Stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}},
		Pdeathsig:   syscall.SIGKILL,
		Setpgid:     true,
	}
	if os.Getuid() != 0 {
		// Mapped to itself, a user other than root keeps its
		// capabilities in the new namespace across exec only as ambient
		// ones: to mount, and for overlayfs, which works in the upper
		// and work directories with the mounter's credentials, to reach
		// the directories it makes without permissions (work/work, mode
		// 0) and make whiteouts. In a namespace that maps only this
		// user, they reach only this user's files.
		cmd.SysProcAttr.AmbientCaps = holderCaps
	}
	stop := make(chan struct{})
	// Dumpable for the start: this process writes the holder's maps
	// (procsec.WhileDumpable), which a user other than root could not in a
	// program made non-dumpable.
	if err := procsec.WhileDumpable(func() error { return startOnOwnThread(cmd, stop) }); err != nil {
		unix.Close(fds[0])
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			err = fmt.Errorf("%w: %w", ErrNoUserNamespaces, err)
		}
		return nil, fmt.Errorf("start overlay holder: %w", err)
	}
	h := &Holder{cmd: cmd, sock: fds[0], pid: cmd.Process.Pid, stop: stop}
	// The holder says it is ready once it runs in its namespaces.
	if _, err := h.answer(); err != nil {
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
// directories on lower's filesystem), at target: each a directory below
// root (an absolute path, trusted), named relative to it. The holder
// opens each beneath root, refusing a symbolic link anywhere on the way
// (openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), and gives overlayfs
// and the mount those descriptors, never the paths: a component an
// agent swaps for a symbolic link before or while the mount is made
// makes it fail, never land elsewhere. It returns the mount's root
// directory, open: Unmount takes it, and a path through it
// (/proc/self/fd/N) reaches the merged view whatever happens to
// target's path later.
func (h *Holder) Mount(root, lower, upper, work, target string) (*os.File, error) {
	return h.MountFrom(root, lower, root, upper, work, target)
}

// MountFrom is Mount with the lower directory below a root of its own,
// lowerRoot (an absolute path, trusted): a lower tree shared by
// processes lives apart from the directories of one process's workers.
func (h *Holder) MountFrom(lowerRoot, lower, root, upper, work, target string) (*os.File, error) {
	for _, r := range []string{root, lowerRoot} {
		if !filepath.IsAbs(r) {
			return nil, fmt.Errorf("overlay mount: root %q is not absolute", r)
		}
	}
	for _, p := range []string{lower, upper, work, target} {
		if !filepath.IsLocal(p) {
			return nil, fmt.Errorf("overlay mount: %q is not a path below its root", p)
		}
	}
	fd, err := h.ask(request{Op: "mount", Root: root, LowerRoot: lowerRoot, Lower: lower, Upper: upper, Work: work, Target: target}, nil)
	if err == nil && fd == nil {
		err = errors.New("overlay mount: the holder sent no mount")
	}
	return fd, err
}

// ReadOnly makes the directory target below root (an absolute path,
// trusted) read-only in the holder's namespace, to every process in it
// (a read-only bind mount of it on itself; the holder opens it as Mount
// opens its directories): the commands that enter the namespace, which
// hold no capability to undo it, can no longer write anything below it
// through any path, while this process, outside, still can. Once per
// directory (a directory removed and made again is a new one); later
// calls return at once.
func (h *Holder) ReadOnly(root, target string) error {
	if !filepath.IsAbs(root) || !filepath.IsLocal(target) {
		return fmt.Errorf("overlay read-only: %q is not a path below %q", target, root)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(root, target), &st); err != nil {
		return fmt.Errorf("overlay read-only: %w", err)
	}
	key := fmt.Sprint(filepath.Join(root, target), st.Dev, st.Ino) // a directory made again is another
	h.roMu.Lock()
	defer h.roMu.Unlock()
	if h.readOnly[key] {
		return nil
	}
	if _, err := h.ask(request{Op: "readonly", Root: root, Target: target}, nil); err != nil {
		return err
	}
	if h.readOnly == nil {
		h.readOnly = map[string]bool{}
	}
	h.readOnly[key] = true
	return nil
}

// Unmount unmounts the overlay whose root dir is (as Mount returned it;
// lazily: a process still in it keeps its view until it leaves). dir
// stays open: the caller closes it.
func (h *Holder) Unmount(dir *os.File) error {
	_, err := h.ask(request{Op: "umount"}, dir)
	return err
}

// ask sends one request, with fd when not nil, and waits for its answer.
func (h *Holder) ask(req request, fd *os.File) (*os.File, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var oob []byte
	if fd != nil {
		oob = unix.UnixRights(int(fd.Fd()))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead != nil {
		return nil, h.dead
	}
	err = unix.Sendmsg(h.sock, b, oob, nil, 0)
	runtime.KeepAlive(fd)
	if err != nil {
		h.dead = fmt.Errorf("overlay holder: %w", err)
		return nil, h.dead
	}
	return h.answer()
}

// answer reads one reply and the descriptor it carries, if any.
func (h *Holder) answer() (*os.File, error) {
	rep, fd, err := recvMsg(h.sock, &reply{})
	if err != nil {
		h.dead = fmt.Errorf("overlay holder ended: %w", err)
		return nil, h.dead
	}
	if rep.Err != "" {
		if fd != nil {
			fd.Close()
		}
		return nil, errors.New(rep.Err)
	}
	return fd, nil
}

// recvMsg reads one message from sock into v, with the descriptor it
// carries (nil when none); io.EOF when the other end closed.
func recvMsg[T any](sock int, v *T) (*T, *os.File, error) {
	buf, oob := make([]byte, 64<<10), make([]byte, unix.CmsgSpace(4*4))
	n, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return nil, nil, err
	}
	var fd *os.File
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err == nil && len(msgs) > 0 {
			fds, _ := unix.ParseUnixRights(&msgs[0])
			for i, f := range fds {
				if i == 0 {
					fd = os.NewFile(uintptr(f), "overlay-mount")
				} else {
					unix.Close(f)
				}
			}
		}
	}
	if n == 0 {
		if fd != nil {
			fd.Close()
		}
		return nil, nil, io.EOF
	}
	if err := json.Unmarshal(buf[:n], v); err != nil {
		if fd != nil {
			fd.Close()
		}
		return nil, nil, fmt.Errorf("bad message %q", buf[:n])
	}
	return v, fd, nil
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
	_ = unix.Shutdown(h.sock, unix.SHUT_RDWR)
	_ = unix.Close(h.sock)
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
	os.Exit(hold(0))
}

// hold serves requests read from the socket sock, answering on it,
// until its other end closes.
func hold(sock int) int {
	send := func(rep reply, fd int) error {
		b, _ := json.Marshal(rep)
		var oob []byte
		if fd >= 0 {
			oob = unix.UnixRights(fd)
		}
		return unix.Sendmsg(sock, b, oob, nil, 0)
	}
	// Mounts made here must not propagate back to the parent's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		_ = send(reply{Err: "make mounts private: " + err.Error()}, -1)
		return 1
	}
	if err := send(reply{}, -1); err != nil {
		return 1
	}
	for {
		req, in, err := recvMsg(sock, &request{})
		if errors.Is(err, io.EOF) {
			return 0
		}
		rep, out := reply{}, -1
		if err != nil {
			rep.Err = "bad request: " + err.Error()
		} else if out, err = serve(*req, in); err != nil {
			rep.Err = err.Error()
		}
		if in != nil {
			in.Close()
		}
		err = send(rep, out)
		if out >= 0 {
			unix.Close(out)
		}
		if err != nil {
			return 1
		}
	}
}

// serve carries out one request, with the descriptor that came with it
// (nil when none), and returns the descriptor to send back (-1 for none).
func serve(req request, in *os.File) (int, error) {
	switch req.Op {
	case "mount":
		return mountBeneath(req)
	case "readonly":
		return -1, readOnlyBeneath(req.Root, req.Target)
	case "umount":
		if in == nil {
			return -1, errors.New("unmount: no mount sent")
		}
		// The path through the descriptor is the mount's root, wherever
		// its mount point's path leads now.
		p := "/proc/self/fd/" + strconv.Itoa(int(in.Fd()))
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && err != unix.EINVAL { // EINVAL: not mounted
			return -1, fmt.Errorf("unmount: %w", err)
		}
		return -1, nil
	}
	return -1, fmt.Errorf("unknown request %q", req.Op)
}
