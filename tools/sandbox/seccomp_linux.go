package sandbox

import (
	"fmt"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"
)

// refused are the system calls answered with EPERM: tracing and reading
// other processes, mounting (old and new API), kernel modules, kexec,
// keyrings, bpf, perf, reboot, swap, accounting, clocks, raw I/O ports,
// namespaces (unshare, setns), handles that bypass paths, stealing
// another process's file descriptors.
var refused = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd",
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
	"fsmount", "fspick", "mount_setattr",
	"init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
	"add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd", "lookup_dcookie",
	"settimeofday", "clock_settime", "clock_adjtime", "syslog", "vhangup",
	"iopl", "ioperm", "unshare", "setns", "open_by_handle_at", "name_to_handle_at",
}

// nsFlags are the clone flags that make new namespaces.
var nsFlags = []uint64{unix.CLONE_NEWUSER, unix.CLONE_NEWNS, unix.CLONE_NEWNET, unix.CLONE_NEWPID,
	unix.CLONE_NEWIPC, unix.CLONE_NEWUTS, unix.CLONE_NEWCGROUP, unix.CLONE_NEWTIME}

// errnoAction answers a call with -errno instead of running it.
func errnoAction(e unix.Errno) seccomp.Action {
	return seccomp.Action(uint32(seccomp.ActionErrno) | uint32(e))
}

// filterPolicy is the seccomp policy: everything allowed except refused
// (EPERM), clone with a namespace flag (EPERM), TIOCSTI and TIOCLINUX
// (typing into a terminal; EPERM), and clone3, whose flags a filter
// cannot read, with ENOSYS, so that the C library falls back to clone.
// The library adds the architecture check and refuses the x32 ABI.
func filterPolicy() (seccomp.Policy, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return seccomp.Policy{}, fmt.Errorf("read the architecture: %w", err)
	}
	var names []string
	for _, n := range refused {
		if _, ok := info.SyscallNames[n]; ok {
			names = append(names, n)
		}
	}
	// One entry per condition: the library ORs the entries of a name.
	var conds []seccomp.NameWithConditions
	for _, f := range nsFlags {
		conds = append(conds, seccomp.NameWithConditions{Name: "clone",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: f}}})
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		conds = append(conds, seccomp.NameWithConditions{Name: "ioctl",
			Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: req}}})
	}
	return seccomp.Policy{
		DefaultAction: seccomp.ActionAllow,
		Syscalls: []seccomp.SyscallGroup{
			{Names: names, Action: errnoAction(unix.EPERM)},
			{NamesWithCondtions: conds, Action: errnoAction(unix.EPERM)},
			{Names: []string{"clone3"}, Action: errnoAction(unix.ENOSYS)},
		},
	}, nil
}

// loadSeccomp sets no_new_privs and installs the filter on every thread.
func loadSeccomp() error {
	pol, err := filterPolicy()
	if err != nil {
		return err
	}
	return seccomp.LoadFilter(seccomp.Filter{NoNewPrivs: true, Flag: seccomp.FilterFlagTSync, Policy: pol})
}
