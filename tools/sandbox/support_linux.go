package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"

	seccomp "github.com/elastic/go-seccomp-bpf"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"

	"github.com/troupe-ai/troupe/internal/procsec"
)

var (
	probed      sync.Once
	probeResult Support
)

func probeOnce() Support {
	probed.Do(func() { probeResult = probe() })
	return probeResult
}

// probe asks the kernel: the Landlock ABI, seccomp, and whether a child
// can be started in a new user + network namespace (or a network
// namespace alone).
func probe() Support {
	var s Support
	if v, err := ll.LandlockGetABIVersion(); err == nil {
		s.LandlockABI = v
	} else {
		s.Notes = append(s.Notes, fmt.Sprintf("landlock: %v", err))
	}
	s.Seccomp = seccomp.Supported()
	if err := tryClone(syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET); err == nil {
		s.UserNS, s.NetNS = true, true
	} else {
		s.Notes = append(s.Notes, fmt.Sprintf("user namespace: %v", err))
		if err := tryClone(syscall.CLONE_NEWNET); err == nil {
			s.NetNS = true
		} else {
			s.Notes = append(s.Notes, fmt.Sprintf("network namespace: %v", err))
		}
	}
	if s.NetNS {
		if fd, err := newNetNS(false); err == nil {
			_ = syscall.Close(fd)
			s.ThreadNetNS = true
		}
	}
	if err := probeThreadMountNS(); err == nil {
		s.ThreadMountNS = true
	} else if !s.UserNS {
		s.Notes = append(s.Notes, fmt.Sprintf("mount namespace: %v", err))
	}
	s.MountNS = s.ThreadMountNS || s.UserNS
	return s
}

// tryClone starts `true` in new namespaces (the flags) and waits for it,
// as startInUserNS would start a launcher: dumpable meanwhile, or a user
// other than root in a non-dumpable program could not write its ID maps
// and would be told it has no user namespaces.
func tryClone(flags uintptr) error {
	path, err := exec.LookPath("true")
	if err != nil {
		return errors.New("no `true` program to probe with")
	}
	cmd := exec.Command(path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
	if flags&syscall.CLONE_NEWUSER != 0 {
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getuid(), HostID: os.Getuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getgid(), HostID: os.Getgid(), Size: 1}}
	}
	return procsec.WhileDumpable(cmd.Run)
}
