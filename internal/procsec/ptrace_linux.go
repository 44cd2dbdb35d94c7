package procsec

import (
	"errors"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// inspectionCaps are the capabilities that let a process read another's
// memory and /proc/<pid>/environ although it is non-dumpable: measured on
// Linux 6.18 as root, any one of CAP_SYS_PTRACE, CAP_SYS_ADMIN and
// CAP_PERFMON is enough.
var inspectionCaps = []uintptr{unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN, unix.CAP_PERFMON}

// Start starts cmd so that it holds no capability that passes the
// non-dumpable check (NoDump keeps same-user processes out of our memory
// and /proc/<pid>/environ, but a command run as root has CAP_SYS_PTRACE,
// CAP_SYS_ADMIN and CAP_PERFMON, each of which gets past it). Capabilities
// are a thread's, so Start locks itself to one OS thread, takes them out
// of that thread's bounding set (a program it starts cannot gain them),
// inheritable and ambient sets, and forks from it; the thread keeps its
// own effective capabilities. Without the privilege to change the
// bounding set (an ordinary user, who has none of them to pass on) the
// command starts as cmd.Start would start it.
func Start(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := dropInspection(); err != nil {
		return err
	}
	return cmd.Start()
}

// dropInspection takes inspectionCaps out of this thread's bounding,
// ambient and inheritable sets.
func dropInspection() error {
	for _, c := range inspectionCaps {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, c, 0, 0, 0)
		if err != nil && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EINVAL) {
			return err
		}
		err = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_LOWER, c, 0, 0)
		if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EPERM) {
			return err
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	changed := false
	for _, c := range inspectionCaps {
		bit, word := uint32(1)<<(c%32), c/32
		if data[word].Inheritable&bit != 0 {
			data[word].Inheritable &^= bit
			changed = true
		}
	}
	if !changed {
		return nil
	}
	return unix.Capset(&hdr, &data[0])
}

// ChildrenMayInspect reports whether a program this thread starts could
// hold one of the capabilities Start takes away: one is still in the
// calling thread's bounding set.
func ChildrenMayInspect() (bool, error) {
	for _, c := range inspectionCaps {
		v, err := unix.PrctlRetInt(unix.PR_CAPBSET_READ, c, 0, 0, 0)
		if err != nil {
			return false, err
		}
		if v == 1 {
			return true, nil
		}
	}
	return false, nil
}
