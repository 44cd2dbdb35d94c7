package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/watch"
)

// watchRuns is how many runs watch shows without --all: the most recent.
const watchRuns = 10

// Frame pacing: a changed tree is redrawn at most frameEvery, an
// unchanged one (its ages move on), or one replaying a backlog, every
// ageEvery.
const (
	frameEvery = 250 * time.Millisecond
	ageEvery   = time.Second
)

// Watcher shows the events of one subscription: the tree, redrawn at most
// four times a second whatever the event rate, or one JSON envelope per
// line.
type Watcher struct {
	es *bus.EventStream
	// Leases are the run leases: a run whose lease lapsed shows lost
	// (nil: none ever does), said on Stderr.
	Leases *cluster.RunLeases
	Stderr io.Writer
	// JSON prints one envelope per line instead of drawing the tree (and
	// a run.lost line for a run found lost).
	JSON bool
	// Resume is the command line that resumes a lost run in its
	// workspace, placing the kinds in placement as they were (nil: a
	// bare orchestrator resume RUN).
	Resume func(run, workspace string, placement map[string]string) string
	runs   map[string]*runSeen // unfinished runs: what resuming them needs
	run    string              // "" for every run
	follow bool                // keep going after the runs finished
	tree   *watch.Tree
	// View is what the tree is drawn on.
	View     *watch.View
	enc      *json.Encoder
	caughtUp bool // the backlog asked for has been shown
	dirty    bool // the tree changed since it was drawn
	drawn    time.Time
}

// NewWatcher is the watcher of es with watch's switches (follow, json,
// from-start, all), drawing on view or printing with enc.
func NewWatcher(es *bus.EventStream, run string, flags map[string]bool, view *watch.View, enc *json.Encoder) *Watcher {
	w := &Watcher{es: es, run: run, follow: flags["follow"], JSON: flags["json"], tree: watch.NewTree(8),
		View: view, enc: enc, caughtUp: !flags["from-start"] || es.Backlog == 0}
	if !flags["all"] {
		w.tree.Keep(watchRuns)
	}
	return w
}

// Loop shows events until the watched runs finished (unless following),
// the subscription ends or ctx is cancelled (interrupted).
func (w *Watcher) Loop(ctx context.Context) (interrupted bool, err error) {
	tick := time.NewTicker(frameEvery)
	defer tick.Stop()
	for {
		select {
		case d, ok := <-w.es.C:
			if !ok {
				return false, nil
			}
			if err := w.apply(d); err != nil {
				return false, err
			}
			if w.done() {
				if w.dirty {
					w.View.Draw(w.tree, time.Now())
				}
				return false, nil
			}
		case now := <-tick.C:
			w.markLost(now)
			if n := w.es.RejectedTotal(); n != w.tree.Refused() {
				w.tree.SetRefused(n)
				w.dirty = true
			}
			// While a backlog replays, a frame a second shows progress;
			// once caught up, changes show at once.
			if !w.JSON && ((w.dirty && w.caughtUp) || now.Sub(w.drawn) >= ageEvery) {
				w.View.Draw(w.tree, now)
				w.dirty, w.drawn = false, now
			}
			if w.done() {
				return false, nil
			}
		case <-ctx.Done():
			if !w.JSON {
				w.View.Draw(w.tree, time.Now())
			}
			if n := w.es.RejectedTotal(); n > 0 {
				fmt.Fprintf(w.Stderr, "watch: %d messages rejected: %v\n", n, w.es.Rejected())
			}
			return true, nil
		}
	}
}

// apply takes one delivered event into the tree, and prints it as JSON.
func (w *Watcher) apply(d bus.Delivery) error {
	w.tree.Apply(d.Event)
	w.see(d.Event)
	if d.Pending == 0 {
		w.caughtUp = true
	}
	if w.JSON {
		return w.enc.Encode(d.Event)
	}
	w.dirty = true
	return nil
}

// done says whether the watch is over: caught up, not following, and the
// run watched (or every run seen) finished.
func (w *Watcher) done() bool {
	if w.follow || !w.caughtUp {
		return false
	}
	if w.run != "" {
		return w.tree.Finished(w.run)
	}
	return w.tree.AllFinished()
}

// AnswerQuestions asks the person at stdin each question that arrives and
// sends the answer (y for yes; anything else, or end of input, is no).
// The view pauses while a question is open, so the tree's redraw neither
// hides the question nor overwrites the answer being typed.
func AnswerQuestions(ctx context.Context, ans *bus.Answerer, stdin io.Reader, stderr io.Writer, view *watch.View) {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-ans.C:
			if !answerOne(ctx, q, lines, stderr, view) {
				return
			}
		}
	}
}

// answerOne puts q to the person and sends their answer; false when ctx
// ended first.
func answerOne(ctx context.Context, q *bus.Question, lines <-chan string, stderr io.Writer, view *watch.View) bool {
	view.Pause()
	defer view.Resume()
	WriteQuestion(stderr, q.Req)
	var line string
	var ok bool
	select {
	case line, ok = <-lines:
	case <-ctx.Done():
		return false
	}
	line = strings.TrimSpace(line)
	var err error
	if IsOpenQuestion(q.Req) {
		if n, e := strconv.Atoi(line); e == nil && n >= 1 && n <= len(q.Req.Choices) {
			line = q.Req.Choices[n-1]
		}
		err = q.Reply(line, "watch")
	} else {
		err = q.Answer(ok && strings.HasPrefix(strings.ToLower(line), "y"), "watch")
	}
	if err != nil {
		fmt.Fprintf(stderr, "answer: %v\n", err)
	}
	return true
}
