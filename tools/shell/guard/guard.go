package guard

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The shell guard is the shell tool's blocklist. It parses a command with
// a real shell parser (mvdan.cc/sh) and checks every simple command it
// would run: the ones in pipelines, lists, functions, $(...) and
// backticks, and, recursively, the scripts given to sh -c, bash -c, eval,
// trap, watch, su -c, or piped into a shell. Words are expanded
// statically (quotes, backslashes, $'...', braces, variables assigned
// earlier in the command, echo and printf output), and wrappers such as
// sudo, env, command, exec, nice, timeout and xargs are looked through.
// It is a safety net against accidents, not a boundary: anything it cannot
// see through (a script file written and then run, another language's
// interpreter) runs unchecked.

// Built-in rule names, quoted in refusals and in the blocked_by metadata.
const (
	RuleRmRoot        = "rm_root"
	RuleChmodRoot     = "chmod_root"
	RuleMkfs          = "mkfs"
	RuleWriteToDevice = "write_to_device"
	RuleForkBomb      = "fork_bomb"
	RuleTooNested     = "too_nested"
)

// guardMaxDepth bounds nested scripts (sh -c inside eval inside ...).
const guardMaxDepth = 8

// guardMaxFields bounds the fields one command expands to (brace ranges
// such as {1..100000000} are cut there, not expanded).
const guardMaxFields = 10000

// guardMaxText bounds a statically computed text (a variable's value,
// echo's output) so that doubling assignments cannot eat the memory.
const guardMaxText = 1 << 20

// unknownMark stands for text the guard cannot know before the command
// runs ($RANDOM, an unset variable, the output of a program). A word
// holding it is never taken for a dangerous path.
const unknownMark = "\uE000"

// Refusal says why a command is refused.
type Refusal struct {
	Rule    string // a built-in rule name or a configured rule's name
	Why     string // what the command would do
	Command string // the simple command that breaks the rule, normalised
}

// Guard checks commands against the built-in rules and the
// configured regular expressions.
type Guard struct {
	user []blockRule
	home string // the user's home directory, protected like /
}

// Check returns why command is refused, or nil.
func (g *Guard) Check(command string) *Refusal {
	w := &guardWalk{g: g, vars: map[string]guardVar{}, substs: map[*syntax.CmdSubst]string{},
		procSubsts: map[*syntax.ProcSubst]string{}}
	w.script(command, 0)
	return w.found
}

// guardVar is a statically known variable.
type guardVar struct {
	str  string
	list []string // an indexed array
	arr  bool
}

// guardWalk is one check's state: the variables and working directory
// known so far, in source order.
type guardWalk struct {
	g     *Guard
	vars  map[string]guardVar
	cwd   string // "" when unknown
	stdin map[*syntax.Stmt]string
	// substs are the static outputs of $(...) substitutions worked out.
	substs     map[*syntax.CmdSubst]string
	procSubsts map[*syntax.ProcSubst]string // their tokens
	procs      []string                     // static outputs of <(...) substitutions, by token
	found      *Refusal
}

func (w *guardWalk) refuse(rule, why string, argv []string) {
	if w.found == nil {
		w.found = &Refusal{Rule: rule, Why: why, Command: joinArgv(argv)}
	}
}

// script checks one script: the command itself, or a nested one.
func (w *guardWalk) script(src string, depth int) {
	if w.found != nil {
		return
	}
	if depth > guardMaxDepth {
		w.refuse(RuleTooNested, fmt.Sprintf("it nests scripts (sh -c, eval, ...) more than %d levels deep, too deep to check", guardMaxDepth), nil)
		return
	}
	if r := w.g.userRule(src); r != "" {
		w.refuse(r, "it matches this configured rule", []string{src})
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		// bash may still run what this parser does not take: fall back to
		// a plain split into words, which sees the obvious forms.
		w.crude(src, depth)
		return
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		if w.found != nil {
			return false
		}
		switch n := n.(type) {
		case *syntax.Stmt:
			w.stmt(n, depth)
		case *syntax.FuncDecl:
			w.funcDecl(n)
		case *syntax.DeclClause:
			w.declare(n)
		}
		return w.found == nil
	})
}

// stmt checks a statement's redirections and, for a simple command, the
// command; for a pipeline it works out what flows into each stage.
func (w *guardWalk) stmt(s *syntax.Stmt, depth int) {
	for _, r := range s.Redirs {
		w.redirect(r)
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(s, c, depth)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			if in, ok := w.stdinOf(s); ok {
				w.setStdin(c.X, in)
			}
			if out, ok := w.output(c.X, 0); ok {
				w.setStdin(c.Y, out)
			}
		}
	}
}

func (w *guardWalk) setStdin(s *syntax.Stmt, text string) {
	if w.stdin == nil {
		w.stdin = map[*syntax.Stmt]string{}
	}
	w.stdin[s] = text
}

// stdinOf is what a statement reads on its standard input, when known:
// a here-document or here-string, else what the pipeline feeds it.
func (w *guardWalk) stdinOf(s *syntax.Stmt) (string, bool) {
	for i := len(s.Redirs) - 1; i >= 0; i-- {
		r := s.Redirs[i]
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			text, ok := w.document(r.Hdoc)
			return text, ok
		case syntax.WordHdoc:
			text, ok := w.literal(r.Word)
			return text + "\n", ok
		case syntax.RdrIn, syntax.RdrInOut:
			return "", false
		}
	}
	in, ok := w.stdin[s]
	return in, ok
}

// call checks one simple command: assignments are remembered, the rest is
// expanded and handed to the rules.
func (w *guardWalk) call(s *syntax.Stmt, c *syntax.CallExpr, depth int) {
	if len(c.Args) == 0 {
		for _, a := range c.Assigns {
			w.assign(a)
		}
		return
	}
	argv := w.fields(c.Args)
	if len(argv) == 0 {
		return
	}
	in, haveIn := w.stdinOf(s)
	w.argv(argv, in, haveIn, depth)
}

// redirect refuses writing redirections into a device.
func (w *guardWalk) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut,
		syntax.RdrAllClob, syntax.AppAllClob, syntax.DplOut:
	default:
		return
	}
	target, ok := w.literal(r.Word)
	if !ok {
		return
	}
	if r.Op == syntax.DplOut && (target == "-" || isDigits(target)) {
		return // >&2, >&-: a descriptor, not a file
	}
	if dev, bad := w.device(target); bad {
		w.refuse(RuleWriteToDevice, fmt.Sprintf("it writes into the device %s", dev), []string{r.Op.String(), target})
	}
}

// funcDecl refuses a function that starts copies of itself in the
// background or in a pipeline: a fork bomb.
func (w *guardWalk) funcDecl(fd *syntax.FuncDecl) {
	names := []string{}
	if fd.Name != nil {
		names = append(names, fd.Name.Value)
	}
	for _, n := range fd.Names {
		names = append(names, n.Value)
	}
	calls := func(s *syntax.Stmt) bool {
		ce, ok := s.Cmd.(*syntax.CallExpr)
		return ok && len(ce.Args) > 0 && slices.Contains(names, ce.Args[0].Lit())
	}
	syntax.Walk(fd.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if (n.Background || n.Coprocess) && calls(n) {
				w.refuse(RuleForkBomb, fmt.Sprintf("function %s starts copies of itself in the background: a fork bomb", names[0]), []string{names[0] + "()"})
			}
		case *syntax.BinaryCmd:
			if (n.Op == syntax.Pipe || n.Op == syntax.PipeAll) && (calls(n.X) || calls(n.Y)) {
				w.refuse(RuleForkBomb, fmt.Sprintf("function %s pipes copies of itself into each other: a fork bomb", names[0]), []string{names[0] + "()"})
			}
		}
		return w.found == nil
	})
}

// declare remembers the values export, declare, local and readonly set.
func (w *guardWalk) declare(d *syntax.DeclClause) {
	for _, a := range d.Args {
		if a.Name != nil && (a.Value != nil || a.Array != nil) {
			w.assign(a)
		}
	}
}

func (w *guardWalk) assign(a *syntax.Assign) {
	if a.Name == nil || a.Index != nil {
		return
	}
	name := a.Name.Value
	if a.Array != nil {
		var words []*syntax.Word
		for _, e := range a.Array.Elems {
			if e.Value != nil {
				words = append(words, e.Value)
			}
		}
		w.vars[name] = guardVar{list: w.fields(words), arr: true}
		return
	}
	val, _ := w.literal(a.Value)
	if a.Append {
		val = w.vars[name].str + val
	}
	if len(val) > guardMaxText {
		val = unknownMark
	}
	w.vars[name] = guardVar{str: val}
}

// device reports whether p names a device that must not be written: a
// path under /dev other than the harmless ones.
func (w *guardWalk) device(p string) (string, bool) {
	if strings.Contains(p, unknownMark) {
		return "", false
	}
	p = w.abs(p)
	if !strings.HasPrefix(p, "/dev/") {
		return "", false
	}
	name := strings.TrimPrefix(p, "/dev/")
	for _, ok := range devAllowed {
		if name == ok || (strings.HasSuffix(ok, "/") && strings.HasPrefix(name, ok)) {
			return "", false
		}
	}
	return p, true
}

// devAllowed are the device names that may be written to ("x/" allows
// everything under x).
var devAllowed = []string{"null", "zero", "full", "random", "urandom", "stdin", "stdout", "stderr", "tty", "ptmx",
	"fd/", "pts/", "shm/", "mqueue/"}

// abs makes p absolute against the known working directory and cleans
// it; a relative path with no known directory stays relative.
func (w *guardWalk) abs(p string) string {
	if strings.HasPrefix(p, "~") && (len(p) == 1 || p[1] == '/') && w.g.home != "" {
		p = w.g.home + p[1:]
	}
	if !strings.HasPrefix(p, "/") {
		if w.cwd == "" {
			return path.Clean(p)
		}
		p = w.cwd + "/" + p
	}
	return path.Clean(p)
}

// protectedDirs are removed, moved or re-owned only by accident.
var protectedDirs = []string{"/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
	"/opt", "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/usr/bin", "/usr/lib", "/usr/local", "/usr/sbin",
	"/usr/share", "/var", "/var/lib", "/Users", "/System", "/Library", "/Applications"}

// rootish reports whether the operand p names /, a system directory, the
// home directory, or a glob over one of them or over their entries.
func (w *guardWalk) rootish(p string) (string, bool) {
	if p == "" || strings.Contains(p, unknownMark) {
		return "", false
	}
	a := w.abs(p)
	if !strings.HasPrefix(a, "/") {
		return "", false
	}
	prot := protectedDirs
	if w.g.home != "" {
		prot = append(prot[:len(prot):len(prot)], path.Clean(w.g.home))
	}
	glob := strings.ContainsAny(a, "*?[")
	for _, d := range prot {
		if a == d {
			return d, true
		}
		if !glob {
			continue
		}
		if dir, base := path.Split(a); strings.ContainsAny(base, "*?[") && path.Clean(dir) == d {
			return "everything in " + d, true // /usr/*, ~/.*
		}
		if m, _ := path.Match(a, d); m {
			return d, true // /u*, /???
		}
	}
	return "", false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// joinArgv renders a command for a refusal, quoting where the shell would
// need it.
func joinArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		a = strings.ReplaceAll(a, unknownMark, "…")
		if q, err := syntax.Quote(a, syntax.LangBash); err == nil && q != a && strings.ContainsAny(a, " \t\n'\"$`\\|&;<>()") {
			a = q
		}
		parts[i] = a
	}
	return strings.Join(parts, " ")
}
