package workspace

import "errors"

// Errors of this package; wrapped with the operation that met them.
var (
	// ErrNoGit is returned when the git program cannot be found.
	ErrNoGit = errors.New("workspace: git not found")
	// ErrTooLarge is returned when a workspace that is not a git checkout
	// is larger than Options.MaxBytes.
	ErrTooLarge = errors.New("workspace: too large to snapshot")
	// ErrBadMode is returned for an apply mode other than apply, branch or patch.
	ErrBadMode = errors.New("workspace: unknown apply mode")
	// ErrBadChangeset is returned for a changeset whose patch does not apply to its snapshot.
	ErrBadChangeset = errors.New("workspace: changeset does not apply to its snapshot")
	// ErrBadObject is returned for a git object that cannot be read as expected.
	ErrBadObject = errors.New("workspace: malformed git object")
)
