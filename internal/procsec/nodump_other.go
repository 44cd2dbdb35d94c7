//go:build !linux

package procsec

// NoDump does nothing outside Linux.
func NoDump() error { return nil }

// Dumpable is always true outside Linux.
func Dumpable() (bool, error) { return true, nil }
