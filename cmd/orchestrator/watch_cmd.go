package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/troupe-ai/troupe/app/console"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/app/runner"
	"github.com/troupe-ai/troupe/app/setup"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/cluster"
	"github.com/troupe-ai/troupe/watch"
)

// cmdWatch follows a swarm's events on NATS: the live agent tree on a
// terminal, or one JSON envelope per line when piped or with --json.
func cmdWatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := flagsOf("watch")
	pos, err := fs.parse(args)
	if err != nil {
		return exitUsage, err
	}
	if len(pos) > 0 {
		return exitUsage, usageErr("watch takes no arguments (did you mean --run %s?)", pos[0])
	}
	cfg, err := config.Load(config.Sources{File: fs.values["config"], Getenv: getenv})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	url, setting := watchURL(cfg.NATS.URL, fs.values["nats"])
	guard, err := webGuard(fs, "web")
	if err != nil {
		return exitUsage, err
	}
	if v := fs.values["creds"]; v != "" {
		cfg.NATS.Creds = v
	}
	log := zerolog.New(setup.Redactor(cfg).Writer(stderr)).Level(zerolog.WarnLevel)
	conn, err := runner.Connect(ctx, cfg.NATS, url, setting, "troupe watch", log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	defer conn.Close()
	stopWeb, err := watchWeb(ctx, conn, guard, log, stderr)
	if err != nil {
		return exitFailed, err
	}
	defer stopWeb()
	fs.bools["follow"] = fs.bools["follow"] || guard != nil // the page outlives any one run
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run := fs.values["run"]
	if run != "" {
		if run, err = conn.FindRun(ctx, run); err != nil {
			return exitUsage, usageErr("--run: %v", err)
		}
	}
	term := console.TerminalOf(stdout, getenv)
	es, err := watchEvents(ctx, conn, run, fs, term, log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	w := newWatcher(es, run, fs.bools, term.View(stdout), json.NewEncoder(stdout))
	w.asJSON = w.asJSON || !term.TTY
	w.leases, w.stderr = watchLeases(ctx, conn, log), stderr
	if fs.bools["interactive"] {
		ans, err := conn.Answer(run, log)
		if err != nil {
			return exitFailed, err
		}
		defer ans.Stop()
		go answerQuestions(ctx, ans, stdin, stderr, w.view)
	}
	fmt.Fprintf(stderr, "watching %s on %s (Ctrl-C to stop)\n", orAll(run), url)
	return w.loop(ctx, stderr)
}

// watchURL is the server watch connects to, and the setting that named it.
func watchURL(configured, flag string) (url, setting string) {
	switch {
	case flag != "":
		return flag, "--nats"
	case configured != "":
		return configured, "TROUPE_NATS_URL"
	}
	return "nats://127.0.0.1:4222", "--nats (default nats://127.0.0.1:4222)"
}

// watchRuns is how many runs watch shows without --all: the most recent.
const watchRuns = 10

// Frame pacing: a changed tree is redrawn at most frameEvery, an
// unchanged one (its ages move on), or one replaying a backlog, every
// ageEvery.
const (
	frameEvery = 250 * time.Millisecond
	ageEvery   = time.Second
)

// watchEvents subscribes to the events watch shows (run's, or every
// run's with ""), the stored ones first with --from-start. On a terminal
// the tree counts the messages the stream refuses: a warning line for
// each would scroll over it.
func watchEvents(ctx context.Context, conn *bus.Conn, run string, fs *flagSet, term console.Terminal, log zerolog.Logger) (*bus.EventStream, error) {
	if term.TTY && !fs.bools["json"] {
		log = log.Level(zerolog.ErrorLevel)
	}
	return conn.Events(ctx, bus.WatchOptions{Run: run, FromStart: fs.bools["from-start"], Log: log})
}

// watchLeases follows the run leases, so that a run whose orchestrator
// died shows lost (nil, with a warning, when they cannot be read).
func watchLeases(ctx context.Context, conn *bus.Conn, log zerolog.Logger) *cluster.RunLeases {
	leases, err := cluster.WatchRunLeases(ctx, conn)
	if err != nil {
		log.Warn().Err(err).Msg("run leases unreadable: a run whose orchestrator died shows running")
	}
	return leases
}

// watcher shows the events of one subscription: the tree, redrawn at most
// four times a second whatever the event rate, or one JSON envelope per
// line.
type watcher struct {
	es       *bus.EventStream
	leases   *cluster.RunLeases // nil: no run is ever shown lost
	stderr   io.Writer
	run      string // "" for every run
	follow   bool   // keep going after the runs finished
	asJSON   bool
	tree     *watch.Tree
	view     *watch.View
	enc      *json.Encoder
	caughtUp bool // the backlog asked for has been shown
	dirty    bool // the tree changed since it was drawn
	drawn    time.Time
}

// newWatcher is the watcher of es with watch's switches (follow, json,
// from-start, all), drawing on view or printing with enc.
func newWatcher(es *bus.EventStream, run string, flags map[string]bool, view *watch.View, enc *json.Encoder) *watcher {
	w := &watcher{es: es, run: run, follow: flags["follow"], asJSON: flags["json"], tree: watch.NewTree(8),
		view: view, enc: enc, caughtUp: !flags["from-start"] || es.Backlog == 0}
	if !flags["all"] {
		w.tree.Keep(watchRuns)
	}
	return w
}

// loop shows events until the watched runs finished (unless following),
// the subscription ends or ctx is cancelled (exit 130).
func (w *watcher) loop(ctx context.Context, stderr io.Writer) (int, error) {
	tick := time.NewTicker(frameEvery)
	defer tick.Stop()
	for {
		select {
		case d, ok := <-w.es.C:
			if !ok {
				return exitOK, nil
			}
			if err := w.apply(d); err != nil {
				return exitFailed, err
			}
			if w.done() {
				if w.dirty {
					w.view.Draw(w.tree, time.Now())
				}
				return exitOK, nil
			}
		case now := <-tick.C:
			w.markLost(now)
			if n := w.es.RejectedTotal(); n != w.tree.Refused() {
				w.tree.SetRefused(n)
				w.dirty = true
			}
			// While a backlog replays, a frame a second shows progress;
			// once caught up, changes show at once.
			if !w.asJSON && ((w.dirty && w.caughtUp) || now.Sub(w.drawn) >= ageEvery) {
				w.view.Draw(w.tree, now)
				w.dirty, w.drawn = false, now
			}
			if w.done() {
				return exitOK, nil
			}
		case <-ctx.Done():
			if !w.asJSON {
				w.view.Draw(w.tree, time.Now())
			}
			if n := w.es.RejectedTotal(); n > 0 {
				fmt.Fprintf(stderr, "watch: %d messages rejected: %v\n", n, w.es.Rejected())
			}
			return exitInterrupt, nil
		}
	}
}

// apply takes one delivered event into the tree, and prints it as JSON.
func (w *watcher) apply(d bus.Delivery) error {
	w.tree.Apply(d.Event)
	if d.Pending == 0 {
		w.caughtUp = true
	}
	if w.asJSON {
		return w.enc.Encode(d.Event)
	}
	w.dirty = true
	return nil
}

// markLost ends the runs whose lease lapsed (their orchestrator is gone)
// as lost, once the backlog is shown.
func (w *watcher) markLost(now time.Time) {
	if w.leases == nil || !w.caughtUp {
		return
	}
	for _, r := range w.tree.Leased() {
		if w.leases.Lost(r.ID, r.Lease, r.Last, now) && w.tree.MarkLost(r.ID) {
			w.dirty = true
			fmt.Fprintf(w.stderr, "run %s lost: its orchestrator stopped heartbeating its lease (%s) before the run finished; resume it with orchestrator resume %s\n",
				r.ID, r.Lease, r.ID)
		}
	}
}

// done says whether the watch is over: caught up, not following, and the
// run watched (or every run seen) finished.
func (w *watcher) done() bool {
	if w.follow || !w.caughtUp {
		return false
	}
	if w.run != "" {
		return w.tree.Finished(w.run)
	}
	return w.tree.AllFinished()
}

// answerQuestions asks the person at stdin each question that arrives and
// sends the answer (y for yes; anything else, or end of input, is no).
// The view pauses while a question is open, so the tree's redraw neither
// hides the question nor overwrites the answer being typed.
func answerQuestions(ctx context.Context, ans *bus.Answerer, stdin io.Reader, stderr io.Writer, view *watch.View) {
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
	console.WriteQuestion(stderr, q.Req)
	var line string
	var ok bool
	select {
	case line, ok = <-lines:
	case <-ctx.Done():
		return false
	}
	line = strings.TrimSpace(line)
	var err error
	if console.IsOpenQuestion(q.Req) {
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

func orAll(run string) string {
	if run == "" {
		return "every run"
	}
	return "run " + run
}
