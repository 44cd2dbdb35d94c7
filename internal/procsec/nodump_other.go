//go:build !linux

package procsec

import "os/exec"

// NoDump does nothing outside Linux.
func NoDump() error { return nil }

// Dumpable is always true outside Linux.
func Dumpable() (bool, error) { return true, nil }

// Start is cmd.Start outside Linux.
func Start(cmd *exec.Cmd) error { return cmd.Start() }

// ChildrenMayInspect is always false outside Linux.
func ChildrenMayInspect() (bool, error) { return false, nil }

// WhileDumpable runs start outside Linux.
func WhileDumpable(start func() error) error { return start() }
