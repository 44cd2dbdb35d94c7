package procsec

import "golang.org/x/sys/unix"

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
