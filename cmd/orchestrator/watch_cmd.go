package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/setup"
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
	url, setting := cfg.NATS.URL, "TROUPE_NATS_URL"
	if v := fs.values["nats"]; v != "" {
		url, setting = v, "--nats"
	}
	if v := fs.values["creds"]; v != "" {
		cfg.NATS.Creds = v
	}
	if url == "" {
		url, setting = "nats://127.0.0.1:4222", "--nats (default nats://127.0.0.1:4222)"
	}
	log := zerolog.New(setup.Redactor(cfg).Writer(stderr)).Level(zerolog.WarnLevel)
	conn, err := bus.Connect(ctx, bus.ConnectOptions{URLs: url, Setting: setting, Token: cfg.NATS.Token, User: cfg.NATS.User,
		Password: cfg.NATS.Password, CredsFile: cfg.NATS.Creds, TLSCA: cfg.NATS.TLSCA, TLSCert: cfg.NATS.TLSCert,
		TLSKey: cfg.NATS.TLSKey, Name: "troupe watch", Prefix: cfg.NATS.Prefix}, log)
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	defer conn.Close()
	run := fs.values["run"]
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	es, err := conn.Events(ctx, bus.WatchOptions{Run: run, FromStart: fs.bools["from-start"], Log: log})
	if err != nil {
		return exitUsage, usageErr("%v", err)
	}
	term := terminalOf(stdout, getenv)
	asJSON := fs.bools["json"] || !term.tty
	tree := watch.NewTree(8)
	view := term.view(stdout)
	if fs.bools["interactive"] {
		ans, err := conn.Answer(run, log)
		if err != nil {
			return exitFailed, err
		}
		defer ans.Stop()
		go answerQuestions(ctx, ans, stdin, stderr, view)
	}
	caughtUp := !fs.bools["from-start"] || es.Backlog == 0
	done := func() bool {
		if fs.bools["follow"] || !caughtUp {
			return false
		}
		if run != "" {
			return tree.Finished(run)
		}
		return tree.AllFinished()
	}
	fmt.Fprintf(stderr, "watching %s on %s (Ctrl-C to stop)\n", orAll(run), url)
	enc := json.NewEncoder(stdout)
	tick := time.NewTicker(100 * time.Millisecond) // at most 10 frames a second
	defer tick.Stop()
	dirty := false
	for {
		select {
		case d, ok := <-es.C:
			if !ok {
				return exitOK, nil
			}
			tree.Apply(d.Event)
			if d.Pending == 0 {
				caughtUp = true
			}
			if asJSON {
				if err := enc.Encode(d.Event); err != nil {
					return exitFailed, err
				}
			} else {
				dirty = true
			}
			if done() {
				if dirty {
					view.Draw(tree, time.Now())
				}
				return exitOK, nil
			}
		case <-tick.C:
			if dirty || (!asJSON && tree.Runs() != nil) {
				view.Draw(tree, time.Now())
				dirty = false
			}
			if done() {
				return exitOK, nil
			}
		case <-ctx.Done():
			if !asJSON {
				view.Draw(tree, time.Now())
			}
			if n := es.RejectedTotal(); n > 0 {
				fmt.Fprintf(stderr, "watch: %d messages rejected: %v\n", n, es.Rejected())
			}
			return exitInterrupt, nil
		}
	}
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
	writeQuestion(stderr, q.Req)
	var line string
	var ok bool
	select {
	case line, ok = <-lines:
	case <-ctx.Done():
		return false
	}
	line = strings.TrimSpace(line)
	var err error
	if isOpenQuestion(q.Req) {
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
