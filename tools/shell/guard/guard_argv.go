package guard

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrapper describes a command that runs another command given as its
// arguments: which of its short and long options take a value, and how
// many operands it takes before the command.
type wrapper struct {
	short    string   // short options that take a value
	long     []string // long options that take a value (without "--")
	operands int      // operands before the command (timeout's duration)
}

// wrappers are looked through to the command they run.
var wrappers = map[string]wrapper{
	"sudo":     {short: "ughpCDrtUT", long: []string{"user", "group", "host", "prompt", "close-from", "chdir", "role", "type", "other-user", "command-timeout"}},
	"doas":     {short: "uC"},
	"command":  {},
	"builtin":  {},
	"exec":     {short: "a"},
	"nohup":    {},
	"nice":     {short: "n", long: []string{"adjustment"}},
	"ionice":   {short: "cnp", long: []string{"class", "classdata"}},
	"timeout":  {short: "sk", long: []string{"signal", "kill-after"}, operands: 1},
	"stdbuf":   {short: "ioe", long: []string{"input", "output", "error"}},
	"setsid":   {},
	"time":     {short: "fo", long: []string{"format", "output"}},
	"taskset":  {operands: 1},
	"chrt":     {operands: 1},
	"unbuffer": {},
	"chroot":   {long: []string{"userspec", "groups"}, operands: 1},
	"flock":    {short: "wEc", long: []string{"timeout", "conflict-exit-code", "command"}, operands: 1},
	"busybox":  {},
	"toybox":   {},
	"strace":   {short: "eoOpPsSuEXI"},
	"ltrace":   {short: "eoOpPsSuEXIn"},
	"fakeroot": {short: "sif"},
	"nsenter":  {short: "tSGrwF"},
	"unshare":  {},
	"runuser":  {short: "ugc", long: []string{"user", "group", "command"}},
	"su":       {short: "cgGs", long: []string{"command", "group", "supp-group", "shell"}},
}

// shells run a script given with -c, a script file, or standard input.
var shells = map[string]bool{"sh": true, "bash": true, "dash": true, "zsh": true, "ksh": true, "mksh": true,
	"ash": true, "yash": true, "posh": true, "rbash": true, "lksh": true, "oksh": true}

// argv checks one simple command with its arguments expanded; in is its
// standard input when known.
func (w *guardWalk) argv(argv []string, in string, haveIn bool, depth int) {
	for len(argv) > 0 && w.found == nil {
		if r := w.g.userRule(joinArgv(argv)); r != "" {
			w.refuse(r, "it matches this configured rule", argv)
			return
		}
		name := baseName(argv[0])
		if strings.Contains(name, unknownMark) {
			return
		}
		if strings.ContainsAny(name, "*?[") {
			// /b?n/r? may be rm: check the command as every dangerous
			// program its name could match.
			for _, cand := range ruleCommands {
				if m, _ := path.Match(name, cand); m {
					w.rules(append([]string{cand}, argv[1:]...), depth)
				}
			}
			return
		}
		switch {
		case name == "env":
			argv = w.unwrapEnv(argv)
			continue
		case name == "xargs":
			argv = xargsCommand(argv, in, haveIn)
			in, haveIn = "", false
			continue
		case name == "su" || name == "runuser" || name == "flock":
			if s, ok := optionValue(argv[1:], "c", "command"); ok {
				w.script(s, depth+1)
				return
			}
		case name == "watch":
			if rest := watchCommand(argv[1:]); rest != "" {
				w.script(rest, depth+1)
			}
			return
		case name == "eval":
			w.script(strings.Join(argv[1:], " "), depth+1)
			return
		case name == "trap":
			if len(argv) > 2 && !strings.HasPrefix(argv[1], "-") {
				w.script(argv[1], depth+1)
			}
			return
		case name == "alias":
			for _, a := range argv[1:] {
				if _, v, ok := strings.Cut(a, "="); ok {
					w.script(v, depth+1)
				}
			}
			return
		case name == "source" || name == ".":
			if len(argv) > 1 {
				w.scriptFile(argv[1], in, haveIn, depth)
			}
			return
		case name == "cd" || name == "pushd":
			w.chdir(argv[1:])
			return
		case shells[name]:
			w.shell(argv, in, haveIn, depth)
			return
		case name == "busybox" || name == "toybox":
			argv = argv[1:]
			continue
		}
		if wr, ok := wrappers[name]; ok {
			if name == "command" && len(argv) > 1 && (argv[1] == "-v" || argv[1] == "-V") {
				return // a lookup, not a run
			}
			argv = wr.command(argv[1:])
			continue
		}
		w.rules(argv, depth)
		return
	}
}

// command returns the command a wrapper runs: its arguments after its
// options and fixed operands.
func (wr wrapper) command(args []string) []string {
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		args = args[1:]
		if strings.HasPrefix(a, "--") {
			if name, _, eq := strings.Cut(a[2:], "="); !eq && len(args) > 0 && slices.Contains(wr.long, name) {
				args = args[1:]
			}
			continue
		}
		for i := 1; i < len(a); i++ {
			if strings.IndexByte(wr.short, a[i]) >= 0 {
				if i == len(a)-1 && len(args) > 0 {
					args = args[1:]
				}
				break
			}
		}
	}
	if len(args) < wr.operands {
		return nil
	}
	return args[wr.operands:]
}

// unwrapEnv returns the command env runs: past its options, NAME=VALUE
// words, and with -S's string split into words.
func (w *guardWalk) unwrapEnv(argv []string) []string {
	args := argv[1:]
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return args[1:]
		case a == "-S" || a == "--split-string":
			if len(args) < 2 {
				return nil
			}
			return append(w.splitWords(args[1]), args[2:]...)
		case strings.HasPrefix(a, "--split-string="):
			return append(w.splitWords(strings.TrimPrefix(a, "--split-string=")), args[1:]...)
		case strings.HasPrefix(a, "-S"):
			return append(w.splitWords(a[2:]), args[1:]...)
		case a == "-u" || a == "-C" || a == "--unset" || a == "--chdir":
			args = args[min(2, len(args)):]
		case strings.HasPrefix(a, "-"):
			args = args[1:]
		case strings.Contains(a, "=") && !strings.HasPrefix(a, "="):
			args = args[1:]
		default:
			return args
		}
	}
	return nil
}

// splitWords splits s into words as the shell would, statically.
func (w *guardWalk) splitWords(s string) []string {
	var words []*syntax.Word
	for wd, err := range syntax.NewParser(syntax.Variant(syntax.LangBash)).WordsSeq(strings.NewReader(s)) {
		if err != nil {
			return strings.Fields(s)
		}
		words = append(words, wd)
	}
	return w.fields(words)
}

// xargsCommand returns the command xargs runs, with the arguments it
// would read from a known standard input appended (or put in place of
// the -I string).
func xargsCommand(argv []string, in string, haveIn bool) []string {
	args := argv[1:]
	replace := ""
	for len(args) > 0 {
		a := args[0]
		if a == "--" {
			args = args[1:]
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		args = args[1:]
		switch {
		case a == "-I":
			if len(args) > 0 {
				replace, args = args[0], args[1:]
			}
		case strings.HasPrefix(a, "-I"):
			replace = a[2:]
		case strings.HasPrefix(a, "--replace"):
			replace = "{}"
			if _, v, ok := strings.Cut(a, "="); ok {
				replace = v
			}
		case len(a) == 2 && strings.ContainsRune("ndsLPaE", rune(a[1])):
			if len(args) > 0 {
				args = args[1:]
			}
		}
	}
	if len(args) == 0 {
		args = []string{"echo"}
	}
	cmd := append([]string(nil), args...)
	if !haveIn {
		if replace != "" {
			for i := range cmd {
				cmd[i] = strings.ReplaceAll(cmd[i], replace, unknownMark)
			}
		}
		return cmd
	}
	if replace != "" {
		line, _, _ := strings.Cut(strings.TrimSpace(in), "\n")
		for i := range cmd {
			cmd[i] = strings.ReplaceAll(cmd[i], replace, line)
		}
		return cmd
	}
	return append(cmd, strings.Fields(in)...)
}

// optionValue finds the value of short option c or long option long.
func optionValue(args []string, c, long string) (string, bool) {
	for i, a := range args {
		switch {
		case a == "--":
			return "", false
		case a == "--"+long && i+1 < len(args):
			return args[i+1], true
		case strings.HasPrefix(a, "--"+long+"="):
			return strings.TrimPrefix(a, "--"+long+"="), true
		case len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.HasSuffix(a, c) && i+1 < len(args):
			return args[i+1], true
		case len(a) > 2 && a[0] == '-' && a[1] != '-' && strings.Contains(a[1:], c):
			if _, v, ok := strings.Cut(a[1:], c); ok && v != "" {
				return v, true
			}
		}
	}
	return "", false
}

// watchCommand is the command line watch runs (its words joined, as watch
// passes them to sh -c).
func watchCommand(args []string) string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		a := args[0]
		args = args[1:]
		if a == "--" {
			break
		}
		if (a == "-n" || a == "-d" || a == "--interval" || a == "-q" || a == "--equexit") && len(args) > 0 {
			args = args[1:]
		}
	}
	return strings.Join(args, " ")
}

// shell checks what a shell would run: its -c string, or its standard
// input when it reads its script from there.
func (w *guardWalk) shell(argv []string, in string, haveIn bool, depth int) {
	args := argv[1:]
	withC, fromStdin := false, false
	for len(args) > 0 {
		a := args[0]
		if a == "--" || a == "-" {
			args = args[1:]
			break
		}
		if !shellOption(a) {
			break
		}
		args = args[1:]
		if strings.HasPrefix(a, "--") {
			if (a == "--rcfile" || a == "--init-file") && len(args) > 0 {
				args = args[1:]
			}
			continue
		}
		for _, c := range a[1:] {
			switch c {
			case 'c':
				withC = true
			case 's':
				fromStdin = true
			case 'o', 'O':
				if len(args) > 0 {
					args = args[1:]
				}
			}
		}
	}
	switch {
	case withC:
		if len(args) > 0 {
			w.script(args[0], depth+1)
		}
	case len(args) == 0 || fromStdin:
		if haveIn {
			w.script(in, depth+1)
		}
	default:
		w.scriptFile(args[0], in, haveIn, depth)
	}
}

// shellOption reports whether a is an option of a shell: -x, +o, -lc,
// --norc. Anything else is its first operand (conservatively: bash
// itself would refuse "+0&x" as an invalid option).
func shellOption(a string) bool {
	var letters string
	if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
		return false
	}
	if strings.HasPrefix(a, "--") {
		letters = strings.ReplaceAll(a[2:], "-", "")
	} else {
		letters = a[1:]
	}
	for _, c := range letters {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') {
			return false
		}
	}
	return letters != ""
}

// scriptFile checks a script a shell or source reads from a path: known
// only when it is a <(...) substitution or the standard input.
func (w *guardWalk) scriptFile(p, in string, haveIn bool, depth int) {
	if text, ok := w.procText(p); ok {
		w.script(text, depth+1)
		return
	}
	if haveIn && (p == "/dev/stdin" || p == "/dev/fd/0" || p == "/proc/self/fd/0" || p == "-") {
		w.script(in, depth+1)
	}
}

// chdir follows cd with a literal directory, so that relative paths
// later in the command resolve; anything else makes the directory
// unknown.
func (w *guardWalk) chdir(args []string) {
	for len(args) > 0 && (args[0] == "-L" || args[0] == "-P" || args[0] == "--") {
		args = args[1:]
	}
	switch {
	case len(args) == 0:
		w.cwd = path.Clean(w.g.home)
	case strings.Contains(args[0], unknownMark) || args[0] == "-":
		w.cwd = ""
	default:
		p := w.abs(args[0])
		if strings.HasPrefix(p, "/") {
			w.cwd = p
		} else {
			w.cwd = ""
		}
	}
}

// baseName is a command's name without its directory (and without a
// leading backslash, which only stops alias expansion).
func baseName(p string) string {
	return path.Base(strings.TrimPrefix(p, `\`))
}
