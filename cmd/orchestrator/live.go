package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/messages"
	"github.com/troupe-ai/troupe/watch"
)

// liveView shows a run as it happens (an actors.Emitter): on a terminal the
// watch view's agent tree, redrawn in place up to ten times a second;
// elsewhere one line per event worth a line.
type liveView struct {
	w     io.Writer
	tree  *watch.Tree
	view  *watch.View
	tty   bool
	start time.Time
	mu    sync.Mutex
	stop  chan struct{}
	done  chan struct{}
	fin   chan struct{} // closed when a followed run finished
}

func newLiveView(w io.Writer, getenv func(string) string) *liveView {
	term := terminalOf(w, getenv)
	l := &liveView{w: w, tree: watch.NewTree(6), tty: term.tty, start: time.Now(),
		view: term.view(w), stop: make(chan struct{}), done: make(chan struct{})}
	if term.tty {
		go l.draw()
	} else {
		close(l.done)
	}
	return l
}

// Emit records ev; off a terminal it prints its line.
func (l *liveView) Emit(ev messages.Event) {
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

func (l *liveView) draw() {
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

// follow feeds the view from the bus: every event of run as published,
// remote agents' included, also to the other sinks. finished then reports
// when run.finished came.
func (l *liveView) follow(ctx context.Context, nb *runBus, run string, also ...func(messages.Event)) error {
	fin, err := followRun(ctx, nb, run, append([]func(messages.Event){l.Emit}, also...)...)
	l.fin = fin
	return err
}

// followRun feeds sinks every event of run from the bus, remote agents'
// included, in order; the channel it returns closes after run.finished
// (or when the subscription ends).
func followRun(ctx context.Context, nb *runBus, run string, sinks ...func(messages.Event)) (chan struct{}, error) {
	es, err := nb.conn.Events(ctx, bus.WatchOptions{Run: run, FromStart: true})
	if err != nil {
		return nil, err
	}
	fin := make(chan struct{})
	go func() {
		defer close(fin)
		for d := range es.C {
			for _, sink := range sinks {
				sink(d.Event)
			}
			if d.Event.Type == messages.EvtRunFinished {
				return
			}
		}
	}()
	return fin, nil
}

// waitFor waits (up to d) until fin is closed; a nil fin is closed.
func waitFor(fin chan struct{}, d time.Duration) {
	if fin == nil {
		return
	}
	select {
	case <-fin:
	case <-time.After(d):
	}
}

// waitFinished waits (up to d) until the followed run's run.finished has
// been shown.
func (l *liveView) waitFinished(d time.Duration) { waitFor(l.fin, d) }

// Close draws the last frame.
func (l *liveView) Close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}
