package console

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// Live shows a run as it happens (an actors.Emitter, fed in-process):
// on a terminal the watch view's agent tree, redrawn in place up to ten
// times a second once started; elsewhere one line per event worth a line.
type Live struct {
	w     io.Writer
	tree  *watch.Tree
	view  *watch.View
	tty   bool
	start time.Time
	mu    sync.Mutex
	once  sync.Once // starts the drawing
	stop  chan struct{}
	done  chan struct{} // closed when the drawing ended (or never started)
}

func NewLive(w io.Writer, getenv func(string) string) *Live {
	term := TerminalOf(w, getenv)
	return &Live{w: w, tree: watch.NewTree(6), tty: term.TTY, start: time.Now(),
		view: term.View(w), stop: make(chan struct{}), done: make(chan struct{})}
}

// Begin starts drawing on a terminal; elsewhere the lines print as the
// events come.
func (l *Live) Begin() {
	l.once.Do(func() {
		if l.tty {
			go l.draw()
		} else {
			close(l.done)
		}
	})
}

// Emit records ev; off a terminal it prints its line.
func (l *Live) Emit(ev messages.Event) {
	l.tree.Apply(ev)
	if l.tty {
		return
	}
	v, err := ev.Decode()
	if err != nil {
		return
	}
	if line := watch.Describe(ev, v); line != "" {
		l.mu.Lock()
		fmt.Fprintf(l.w, "%6.2fs  %s\n", time.Since(l.start).Seconds(), line)
		l.mu.Unlock()
	}
}

func (l *Live) draw() {
	defer close(l.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.view.Draw(l.tree, time.Now())
		case <-l.stop:
			l.view.Draw(l.tree, time.Now())
			return
		}
	}
}

// Close draws the last frame (when drawing started); closing again does
// nothing.
func (l *Live) Close() {
	l.once.Do(func() { close(l.done) }) // never started: nothing to draw
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}
