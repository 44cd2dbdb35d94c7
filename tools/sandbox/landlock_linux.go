package sandbox

import (
	"fmt"
	"os"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
)

// Landlock rights, by what they are for.
const (
	readFile = ll.AccessFSExecute | ll.AccessFSReadFile
	writeAll = ll.AccessFSWriteFile | ll.AccessFSReadFile | ll.AccessFSExecute | ll.AccessFSReadDir |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeDir | ll.AccessFSMakeReg |
		ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSTruncate
	deviceRW = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
	fileRW   = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate
)

// devices are the character devices every command may write: the bit
// buckets, the random sources and terminals.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}

// applyLandlock restricts this process (every thread) to p: read and
// execute everywhere but p.DenyRead, list every directory, write beneath
// p.Writable and to the devices; signals and abstract UNIX sockets scoped
// to the sandbox; with network deny and no namespace of its own, no TCP
// bind or connect. Rights this kernel lacks are left out (best effort):
// Check and Missing say which.
func applyLandlock(p Policy, inNetNS bool) error {
	cfg, rules := landlockRules(p, inNetNS)
	return cfg.BestEffort().Restrict(rules...)
}

// restrictThread applies the same Landlock rules to the calling thread
// only (no_new_privs must be set on it first).
func restrictThread(p Policy, inNetNS bool) error {
	cfg, rules := landlockRules(p, inNetNS)
	fd, flags, err := cfg.BestEffort().NewRulesetFD(rules...)
	if err != nil || fd < 0 {
		return err
	}
	defer syscall.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// landlockRules are the configuration and rules for p.
func landlockRules(p Policy, inNetNS bool) (landlock.Config, []landlock.Rule) {
	cfg := landlock.Config{
		// IOCTL on devices stays unrestricted (terminals need it); the
		// newer UNIX-socket right is not handled at ABI 7.
		HandledAccessFS: landlock.V7.HandledAccessFS &^ ll.AccessFSIoctlDev,
		Scoped:          landlock.ScopedSet(ll.ScopeSignal | ll.ScopeAbstractUnixSocket),
	}
	if p.Network == NetworkDeny || (p.Network == NetworkLoopback && !inNetNS) {
		// Without a namespace, loopback cannot be told from the rest by
		// port rules: such a command gets no TCP at all (fail closed).
		cfg.HandledAccessNet = ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	}
	dirs, files := splitFiles(p.Writable)
	rules := []landlock.Rule{
		landlock.PathAccess(ll.AccessFSReadDir, "/"),
		landlock.PathAccess(readFile, grantsMemo.get(p.DenyRead)...).IgnoreIfMissing(),
		landlock.PathAccess(writeAll, dirs...).IgnoreIfMissing(),
		landlock.PathAccess(fileRW, files...).IgnoreIfMissing(),
		landlock.PathAccess(deviceRW, devices...).IgnoreIfMissing(),
		landlock.PathAccess(writeAll&^ll.AccessFSExecute, "/dev/pts").IgnoreIfMissing(),
	}
	return cfg, rules
}

// splitFiles parts paths into folders (and missing paths) and the files
// among them, which take only file rights (a write grant split around a
// read-only tree names files too).
func splitFiles(paths []string) (dirs, files []string) {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			files = append(files, p)
		} else {
			dirs = append(dirs, p)
		}
	}
	return dirs, files
}
