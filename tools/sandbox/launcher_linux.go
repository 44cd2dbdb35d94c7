package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/troupe-ai/troupe/internal/overlay"
)

// launcherArg0 marks a re-execution of our binary as the launcher.
const launcherArg0 = "troupe-sandbox"

// policyEnv carries the launcher's payload; the launcher removes it
// before the command starts.
const policyEnv = "TROUPE_SANDBOX_POLICY"

// selfExe is this program, for the kernel: /proc/self/exe names the
// running binary even if its file has been replaced since.
const selfExe = "/proc/self/exe"

// payload is what the launcher is told: the policy, what the parent
// found the kernel supports (so the launcher does not probe again) and
// whether the launcher was started in a network namespace of its own.
type payload struct {
	Policy    Policy  `json:"policy"`
	Support   Support `json:"support"`
	InNetNS   bool    `json:"in_netns"`
	InMountNS bool    `json:"in_mountns"`
	// MustBind: fail when the read-only trees cannot be bound, rather
	// than split the writes around them (bindprobe_linux.go).
	MustBind bool `json:"must_bind,omitempty"`
}

// Confine rewrites cmd (built by exec.Command, not started) so that it
// starts through the launcher under p, with what s says this kernel
// supports: its Path becomes our own binary, its Args the launcher's,
// the policy joins its environment, and for network deny or loopback it
// gets new user and network namespaces, for read-only trees beneath a
// writable one new user and mount namespaces (SysProcAttr is created if nil;
// callers that set SysProcAttr afterwards must keep Cloneflags and the ID
// mappings). A command exec.Command could not find is left as it is, so
// that Start reports it.
func Confine(cmd *exec.Cmd, p Policy, s Support) error {
	return confine(cmd, p, s, false)
}

// confine is Confine; entered says the command enters another mount
// namespace first (startEntered), where the holes are not what this
// process sees at their paths (an overlay's mount point is an empty
// directory here): a mount namespace is then asked for whenever the
// policy names a read-only tree beneath a writable one, and the launcher
// binds those of them it finds.
func confine(cmd *exec.Cmd, p Policy, s Support, entered bool) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if cmd.Err != nil {
		return nil
	}
	if miss := s.Missing(p); p.Required && len(miss) > 0 {
		return fmt.Errorf("%w: %v", ErrUnsupported, miss)
	}
	pl := payload{Policy: p, Support: s}
	net := p.Network == NetworkDeny || p.Network == NetworkLoopback
	holes := len(p.holes()) > 0
	if entered {
		holes = len(p.namedHoles()) > 0
	}
	mount := holes && s.MountNS
	if net || mount {
		if cmd.SysProcAttr == nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{}
		}
		a := cmd.SysProcAttr
		switch {
		case s.UserNS:
			if mount {
				if err := launcherBinds(); err != nil { // it would split the writes anyway: no mount namespace, no CAP_SYS_ADMIN
					noteFallback(err.Error())
					mount = false
				}
			}
			a.Cloneflags |= syscall.CLONE_NEWUSER
			a.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
			a.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
			pl.InNetNS, pl.InMountNS = net, mount
			a.AmbientCaps = append(a.AmbientCaps, launcherCaps(p.Network == NetworkLoopback, mount)...)
		default:
			pl.InNetNS, pl.InMountNS = net && s.NetNS, mount && s.ThreadMountNS
		}
		if pl.InNetNS {
			a.Cloneflags |= syscall.CLONE_NEWNET
		}
		if pl.InMountNS {
			a.Cloneflags |= syscall.CLONE_NEWNS
		}
	}
	if holes && !pl.InMountNS { // the launcher splits the writes around them
		noteFallback(s.noMountNS())
	}
	raw, err := json.Marshal(pl)
	if err != nil {
		return fmt.Errorf("encode the sandbox policy: %w", err)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, policyEnv+"="+string(raw))
	cmd.Args = append([]string{launcherArg0, cmd.Path}, cmd.Args...)
	cmd.Path = selfExe
	return nil
}

// launcherCaps are the capabilities a launcher started in a new user
// namespace needs there for what it sets up before it drops them all
// (apply): CAP_NET_ADMIN to bring loopback up, CAP_SYS_ADMIN to bind the
// holes read-only. Root mapped to itself holds every capability in the
// new namespace after its exec; any other user mapped to itself holds
// none after its exec unless they are ambient ones, which these become
// (SysProcAttr.AmbientCaps: the child raises them in its new namespace,
// where it holds them all, before its exec). Without them such a
// launcher could bind nothing and silently split the writes around the
// holes instead (no new entry at the workspace's top), and could not
// bring loopback up.
func launcherCaps(loopback, mount bool) []uintptr {
	if os.Getuid() == 0 || launcherCapsOff {
		return nil
	}
	var caps []uintptr
	if loopback {
		caps = append(caps, unix.CAP_NET_ADMIN)
	}
	if mount {
		caps = append(caps, unix.CAP_SYS_ADMIN)
	}
	return caps
}

// MaybeRunLauncher runs the launcher and never returns when this process
// was started as one (by Confine); otherwise it returns at once. Call it
// first thing in main of every program that confines commands, and in
// TestMain of tests that do.
func MaybeRunLauncher() {
	// The holder of overlay worktrees' mounts is the same binary again,
	// started by every program that starts launchers.
	overlay.MaybeRunHolder()
	maybeFork()
	if len(os.Args) < 3 || os.Args[0] != launcherArg0 {
		return
	}
	os.Exit(launch(os.Args[1], os.Args[2:]))
}

// launch applies the payload's policy to this process and execs path
// with argv; it returns only on failure, with the exit status to use
// (126: the sandbox could not be applied, 127: the program was not
// found), having said why on stderr.
func launch(path string, argv []string) int {
	raw, ok := os.LookupEnv(policyEnv)
	_ = os.Unsetenv(policyEnv)
	if !ok {
		fmt.Fprintln(os.Stderr, "troupe sandbox: started as the launcher without a policy")
		return 126
	}
	var pl payload
	if err := json.Unmarshal([]byte(raw), &pl); err != nil {
		fmt.Fprintf(os.Stderr, "troupe sandbox: read the policy: %v\n", err)
		return 126
	}
	runtime.LockOSThread()
	if err := apply(pl); err != nil {
		fmt.Fprintf(os.Stderr, "troupe sandbox: %v\n", err)
		return 126
	}
	err := syscall.Exec(path, argv, os.Environ())
	fmt.Fprintf(os.Stderr, "%s: %v\n", argv[0], err)
	if err == syscall.ENOENT {
		return 127
	}
	return 126
}

// apply confines this process: loopback up in its own namespace, the
// read-only trees bound (or, without a mount namespace, the writes split
// around them), then capabilities, Landlock, and last no_new_privs with
// the seccomp filter (which refuses calls the steps before it make).
func apply(pl payload) error {
	if pl.InNetNS && pl.Policy.Network == NetworkLoopback {
		if err := loopbackUp(); err != nil {
			return err
		}
	}
	if holes := pl.Policy.holes(); pl.InMountNS && pl.MustBind {
		if err := mountReadOnly(holes, false); err != nil {
			return err
		}
	} else if pl.InMountNS {
		pl.Policy = protectHoles(pl.Policy, holes, false)
	} else if len(holes) > 0 {
		pl.Policy = pl.Policy.splitWrites(holes)
	}
	if err := dropCaps(); err != nil {
		return err
	}
	if pl.Support.LandlockABI > 0 {
		if err := applyLandlock(pl.Policy, pl.InNetNS); err != nil {
			return fmt.Errorf("apply landlock: %w", err)
		}
	}
	if pl.Support.Seccomp {
		return loadSeccomp(true, true)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	return nil
}
