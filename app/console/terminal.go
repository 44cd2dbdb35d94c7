package console

import (
	"io"
	"os"

	"github.com/troupe-ai/troupe/watch"
	"golang.org/x/sys/unix"
)

// Terminal is what the programs need to know about an output.
type Terminal struct {
	TTY   bool // a terminal
	Color bool // a terminal to colour
	fd    int
}

// TerminalOf looks at w: whether it is a terminal, and whether to colour
// it (only a terminal, never with NO_COLOR set or TERM=dumb).
func TerminalOf(w io.Writer, getenv func(string) string) Terminal {
	f, ok := w.(*os.File)
	if !ok {
		return Terminal{}
	}
	fd := int(f.Fd())
	if _, err := unix.IoctlGetTermios(fd, unix.TCGETS); err != nil {
		return Terminal{}
	}
	return Terminal{TTY: true, Color: ColorOK(getenv), fd: fd}
}

// Size reads the terminal's columns and rows now (0 when unknown), so a
// resized terminal gets frames that fit.
func (t Terminal) Size() (cols, rows int) {
	if !t.TTY {
		return 0, 0
	}
	ws, err := unix.IoctlGetWinsize(t.fd, unix.TIOCGWINSZ)
	if err != nil {
		return 0, 0
	}
	return int(ws.Col), int(ws.Row)
}

// View is a watch view drawing on this terminal.
func (t Terminal) View(w io.Writer) *watch.View {
	return &watch.View{W: w, Color: t.Color, Size: t.Size}
}

// IsTerminal reports whether f is a terminal: /dev/null, a file or a
// pipe is not (though /dev/null is a character device too).
func IsTerminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// ColorOK says whether to colour output on a terminal: never with NO_COLOR
// set (https://no-color.org) or TERM=dumb.
func ColorOK(getenv func(string) string) bool {
	return getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}
