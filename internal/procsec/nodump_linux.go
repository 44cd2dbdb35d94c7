package procsec

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// NoDump makes the process non-dumpable: processes of the same user (the
// commands the shell tool runs, among them) can no longer read its memory
// or /proc/<pid>/environ, where the model API key lives. Call it first
// thing in main.
func NoDump() error { return unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }

// Dumpable reports the process's dumpable flag.
func Dumpable() (bool, error) {
	v, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	return v != 0, err
}

// dumpableMu serialises the starts WhileDumpable makes.
var dumpableMu sync.Mutex

// WhileDumpable runs start (a start of a child in a user namespace of its
// own) with the process dumpable, then makes it non-dumpable again if it
// was. Such a child's uid and gid maps are written by this process
// between its fork and its exec, and until its exec the child is as
// dumpable as this process: the kernel gives the /proc files of a
// non-dumpable process to root, so a user other than root, in a program
// that called NoDump, could not write them (EACCES) and would get no
// user namespace at all. The process is dumpable for the start alone; a
// command in the sandbox cannot reach it even then (Landlock keeps
// ptrace, and with it /proc/<pid>/environ, within its domain). Root,
// which writes the maps whatever the owner, is left as it is.
func WhileDumpable(start func() error) error {
	dumpableMu.Lock()
	defer dumpableMu.Unlock()
	was, err := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	if err != nil || was != 0 || os.Getuid() == 0 {
		return start()
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0); err != nil {
		return start()
	}
	defer func() { _ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0) }()
	return start()
}
