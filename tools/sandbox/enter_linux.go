package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
)

// A command in a tree that is entered first (an overlay worktree held in
// another process's user and mount namespaces, joined with nsenter)
// cannot be confined before it starts: the seccomp filter refuses setns
// and a namespace made before nsenter could not be left. So it starts as
// nsenter (the enter prefix), which joins the tree's namespaces and runs
// our binary as the forker; the forker starts the launcher as Confine
// would have, with the new namespaces made from inside the joined ones
// (a user namespace may make nested ones), waits for it and ends as it
// ended. The launcher then confines itself as ever (loopback, read-only
// trees, capabilities, Landlock, seccomp) and execs the command.

// forkEnv carries the forker's spec; the forker removes it.
const forkEnv = "TROUPE_SANDBOX_FORK"

// forkSpec is what the forker is told: the namespaces to make for the
// launcher, the IDs to map in a new user namespace, and how many
// descriptors past stderr to pass on.
type forkSpec struct {
	Clone uintptr `json:"clone"`
	UID   int     `json:"uid"`
	GID   int     `json:"gid"`
	Files int     `json:"files"`
	// Caps are the launcher's ambient capabilities (launcherCaps), raised
	// by the forker's child in the new user namespace: nsenter, started
	// outside it, could not.
	Caps []uintptr `json:"caps,omitempty"`
}

// startEntered starts cmd confined by p after entering with the argv
// prefix enter (its working directory is the prefix's).
func startEntered(cmd *exec.Cmd, enter []string, p Policy, s Support) error {
	if len(enter) == 0 {
		return fmt.Errorf("start entered: no enter prefix")
	}
	if err := confine(cmd, p, s, true); err != nil {
		return err
	}
	if cmd.Err != nil {
		return cmd.Start() // reports the program not found
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("start entered: %w", err)
	}
	spec := forkSpec{UID: os.Getuid(), GID: os.Getgid(), Files: len(cmd.ExtraFiles)}
	if a := cmd.SysProcAttr; a != nil {
		spec.Clone = a.Cloneflags
		spec.Caps = a.AmbientCaps
		a.Cloneflags, a.UidMappings, a.GidMappings, a.AmbientCaps = 0, nil, nil, nil
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	cmd.Env = append(cmd.Env, forkEnv+"="+string(raw))
	// Confine made Args [launcherArg0, program, its args...].
	cmd.Args = append(append(slices.Clone(enter), exe), cmd.Args...)
	cmd.Path, cmd.Dir = enter[0], ""
	return onFreshThread(cmd, cmd.Start)
}

// StartEntered is Start for a command that enters its tree first with
// the argv prefix enter (tools.Workspace.Enter): cmd's Dir is replaced by
// the prefix's directory.
func (b *Box) StartEntered(cmd *exec.Cmd, enter []string) error {
	sup, err := b.prepare(cmd)
	if err != nil {
		return err
	}
	return startEntered(cmd, enter, b.Policy(), sup)
}

// maybeFork runs the forker and never returns when this process was
// started as one (startEntered); otherwise it returns at once.
func maybeFork() {
	raw, ok := os.LookupEnv(forkEnv)
	if !ok || len(os.Args) < 3 || os.Args[1] != launcherArg0 {
		return
	}
	_ = os.Unsetenv(forkEnv)
	var spec forkSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "troupe sandbox: read the forker's spec: %v\n", err)
		os.Exit(126)
	}
	os.Exit(fork(spec))
}

// fork starts the launcher (os.Args[1:]) in the namespaces spec names,
// passes on the signals that would end it, and returns its exit status
// (re-raising the signal that killed it).
func fork(spec forkSpec) int {
	runtime.LockOSThread() // the child's parent-death signal follows this thread
	cmd := &exec.Cmd{Path: selfExe, Args: os.Args[1:], Env: os.Environ(),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	for i := range spec.Files {
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(3+i), "inherited"))
	}
	a := &syscall.SysProcAttr{Cloneflags: spec.Clone, Pdeathsig: syscall.SIGKILL}
	if spec.Clone&syscall.CLONE_NEWUSER != 0 {
		a.UidMappings = []syscall.SysProcIDMap{{ContainerID: spec.UID, HostID: spec.UID, Size: 1}}
		a.GidMappings = []syscall.SysProcIDMap{{ContainerID: spec.GID, HostID: spec.GID, Size: 1}}
		a.AmbientCaps = spec.Caps
	}
	cmd.SysProcAttr = a
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "troupe sandbox: start the launcher: %v\n", err)
		return 126
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), ws.Signal())
		return 128 + int(ws.Signal())
	}
	return cmd.ProcessState.ExitCode() & 0xff
}
