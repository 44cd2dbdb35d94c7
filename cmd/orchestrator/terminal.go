package main

import (
	"io"
	"os"

	"github.com/troupe-ai/troupe/watch"
	"golang.org/x/sys/unix"
)

// terminal is what the programs need to know about an output.
type terminal struct {
	tty   bool
	color bool
	fd    int
}

// terminalOf looks at w: whether it is a terminal, and whether to colour
// it (only a terminal, never with NO_COLOR set or TERM=dumb).
func terminalOf(w io.Writer, getenv func(string) string) terminal {
	f, ok := w.(*os.File)
	if !ok {
		return terminal{}
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return terminal{}
	}
	return terminal{tty: true, color: colorOK(getenv), fd: fd}
}

// size reads the terminal's columns and rows now (0 when unknown), so a
// resized terminal gets frames that fit.
func (t terminal) size() (cols, rows int) {
	if !t.tty {
		return 0, 0
	}
	ws, err := unix.IoctlGetWinsize(t.fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}

// view is a watch view drawing on this terminal.
func (t terminal) view(w io.Writer) *watch.View {
	return &watch.View{W: w, Color: t.color, Size: t.size}
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
