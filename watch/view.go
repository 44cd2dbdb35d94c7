package watch

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// View draws a Tree on a terminal, redrawing it in place. The frame is
// kept within the terminal's rows and columns (re-read before every frame
// when Size is set, so a resized terminal gets frames that fit), because a
// frame taller than the screen cannot be redrawn in place. Pause stops the
// drawing while something else (a question) uses the terminal. A View is
// safe for concurrent use.
type View struct {
	W     io.Writer
	Color bool // ANSI colours (only on a terminal, never with NO_COLOR)
	// Width and Height are the terminal's columns and rows; 0 = 100
	// columns, no row limit. Size, when set, is asked before every frame
	// instead.
	Width, Height int
	Size          func() (cols, rows int)

	mu     sync.Mutex
	drawn  int // lines of the last frame still on screen
	paused bool
}

const (
	ansiReset  = "\x1b[0m"
	ansiDim    = "\x1b[2m"
	ansiBold   = "\x1b[1m"
	ansiGreen  = "\x1b[32m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiCyan   = "\x1b[36m"
)

// Draw replaces the previous frame with the tree as it is now (nothing
// while paused).
func (v *View) Draw(t *Tree, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.paused {
		return
	}
	cols, rows := v.Width, v.Height
	if v.Size != nil {
		cols, rows = v.Size()
	}
	if cols <= 0 {
		cols = 100
	}
	if rows > 0 {
		rows-- // the line the cursor rests on below the frame
	}
	lines := Frame(t, now, Layout{Width: cols, Height: rows, Color: v.Color})
	var b strings.Builder
	if v.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dF\x1b[J", v.drawn) // to the first line of the last frame, clear below
	}
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	v.drawn = len(lines)
	_, _ = io.WriteString(v.W, b.String())
}

// Pause stops drawing until Resume, waiting for a frame being drawn; the
// last frame stays on screen. Whatever is printed meanwhile (a question
// and its answer) stays too: the next frame is drawn below it.
func (v *View) Pause() {
	v.mu.Lock()
	v.paused, v.drawn = true, 0
	v.mu.Unlock()
}

// Resume starts drawing again after Pause.
func (v *View) Resume() {
	v.mu.Lock()
	v.paused, v.drawn = false, 0
	v.mu.Unlock()
}
