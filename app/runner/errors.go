package runner

import (
	"errors"
	"fmt"
)

// ErrUsage marks an error that is the caller's (a flag, an argument or a
// setting that does not work): the programs exit with code 2 for it.
var ErrUsage = errors.New("usage")

// Usage is an ErrUsage saying what is wrong: "usage: " and the message.
func Usage(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}
