package sandbox

import (
	"fmt"
	"sync"
	"unsafe"

	seccomp "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
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
// (EPERM), TIOCSTI and TIOCLINUX (typing into a terminal; EPERM), and,
// with cloneRules, clone with a namespace flag (EPERM) and clone3, whose
// flags a filter cannot read, with ENOSYS, so that the C library falls
// back to clone. The library adds the architecture check and refuses
// the x32 ABI. The filter a command inherits from the thread that
// starts it has no cloneRules: that thread's own clone (with namespace
// flags, or clone3 into a cgroup) must go through.
func filterPolicy(cloneRules bool) (seccomp.Policy, error) {
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
		if !cloneRules {
			break
		}
		conds = append(conds, seccomp.NameWithConditions{Name: "clone",
			Conditions: seccomp.ArgumentConditions{{Argument: 0, Operation: seccomp.BitsSet, Value: f}}})
	}
	for _, req := range []uint64{unix.TIOCSTI, unix.TIOCLINUX} {
		conds = append(conds, seccomp.NameWithConditions{Name: "ioctl",
			Conditions: seccomp.ArgumentConditions{{Argument: 1, Operation: seccomp.Equal, Value: req}}})
	}
	groups := []seccomp.SyscallGroup{
		{Names: names, Action: errnoAction(unix.EPERM)},
		{NamesWithCondtions: conds, Action: errnoAction(unix.EPERM)},
	}
	if cloneRules {
		groups = append(groups, seccomp.SyscallGroup{Names: []string{"clone3"}, Action: errnoAction(unix.ENOSYS)})
	}
	return seccomp.Policy{DefaultAction: seccomp.ActionAllow, Syscalls: groups}, nil
}

// programs are the assembled filters, with and without cloneRules.
var programs [2]struct {
	once sync.Once
	prog []unix.SockFilter
	err  error
}

// program assembles the filter once.
func program(cloneRules bool) ([]unix.SockFilter, error) {
	i := 0
	if cloneRules {
		i = 1
	}
	p := &programs[i]
	p.once.Do(func() {
		pol, err := filterPolicy(cloneRules)
		if err != nil {
			p.err = err
			return
		}
		insts, err := pol.Assemble()
		if err != nil {
			p.err = fmt.Errorf("assemble the seccomp filter: %w", err)
			return
		}
		raw, err := bpf.Assemble(insts)
		if err != nil {
			p.err = fmt.Errorf("assemble the seccomp filter: %w", err)
			return
		}
		for _, r := range raw {
			p.prog = append(p.prog, unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K})
		}
	})
	return p.prog, p.err
}

// loadSeccomp sets no_new_privs and installs the filter on the calling
// thread, or on every thread of the process with allThreads.
func loadSeccomp(cloneRules, allThreads bool) error {
	prog, err := program(cloneRules)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("set no_new_privs: %w", err)
	}
	flags := uintptr(0)
	if allThreads {
		flags = unix.SECCOMP_FILTER_FLAG_TSYNC
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	if errno != 0 {
		return fmt.Errorf("load the seccomp filter: %w", errno)
	}
	return nil
}
