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
	"github.com/troupe-ai/troupe/actors"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/config"
	"github.com/troupe-ai/troupe/internal/setup"
	"github.com/troupe-ai/troupe/watch"
)

// cmdWatch follows a swarm's events on NATS: the live agent tree on a
// terminal, or one JSON envelope per line when piped or with --json.
func cmdWatch(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet([]string{"nats", "run", "config"}, []string{"from-start", "json", "follow", "interactive"})
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
	if fs.bools["interactive"] {
		ans, err := conn.Answer(run, log)
		if err != nil {
			return exitFailed, err
		}
		defer ans.Stop()
		go answerQuestions(ctx, ans, stdin, stderr)
	}
	tty, width := terminalOf(stdout)
	asJSON := fs.bools["json"] || !tty
	tree := watch.NewTree(8)
	view := &watch.View{W: stdout, Color: tty && colorOK(getenv), Width: width}
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
func answerQuestions(ctx context.Context, ans *bus.Answerer, stdin io.Reader, stderr io.Writer) {
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case q := <-ans.C:
			open := q.Req.Tool == "ask_user"
			if open {
				fmt.Fprintf(stderr, "\n%s agent %s (run %s) asks: %s\n", q.Req.Kind, q.Req.Agent, q.Req.Run, q.Req.Question)
				for i, c := range q.Req.Choices {
					fmt.Fprintf(stderr, "  %d. %s\n", i+1, c)
				}
				fmt.Fprint(stderr, "Answer: ")
			} else {
				args := string(q.Req.Args)
				if len(args) > 400 {
					args = args[:400] + "…"
				}
				fmt.Fprintf(stderr, "\n%s agent %s (run %s) asks: %s %s\n%sAllow? [y/N] ", q.Req.Kind, q.Req.Agent, q.Req.Run, q.Req.Question, args, actors.DiffBlock(q.Req))
			}
			var line string
			var ok bool
			select {
			case line, ok = <-lines:
			case <-ctx.Done():
				return
			}
			line = strings.TrimSpace(line)
			var err error
			if open {
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
		}
	}
}

func orAll(run string) string {
	if run == "" {
		return "every run"
	}
	return "run " + run
}
