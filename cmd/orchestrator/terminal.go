package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// terminalOf reports whether w is a terminal, and its width in columns.
func terminalOf(w io.Writer) (bool, int) {
	f, ok := w.(*os.File)
	if !ok {
		return false, 0
	}
	if _, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS); err != nil {
		return false, 0
	}
	width := 100
	if ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); err == nil && ws.Col > 0 {
		width = int(ws.Col)
	}
	return true, width
}

// isTerminal reports whether f is a terminal: /dev/null, a file or a
// pipe is not (though /dev/null is a character device too).
func isTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// colorOK says whether to colour output on a terminal: never with NO_COLOR
// set (https://no-color.org) or TERM=dumb.
func colorOK(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}
