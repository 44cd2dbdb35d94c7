package guard

import (
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Static expansion: what the guard can know of a word before anything
// runs. Quotes, backslashes, $'...', brace expansion, variables assigned
// earlier in the command and the output of echo and printf (also through
// $(...), <(...), pipes and here-documents) are worked out; anything else
// becomes unknownMark.

// config is the expansion configuration over the walk's known state.
func (w *guardWalk) config() *expand.Config {
	return &expand.Config{
		Env: guardEnv{w},
		CmdSubst: func(out io.Writer, cs *syntax.CmdSubst) error {
			text, seen := w.substs[cs]
			if !seen {
				// Marked unknown first: a substitution is worked out once,
				// however deeply substitutions nest.
				w.substs[cs] = unknownMark
				var ok bool
				if text, ok = w.outputs(cs.Stmts); !ok {
					text = unknownMark
				}
				w.substs[cs] = text
			}
			_, err := io.WriteString(out, text)
			return err
		},
		ProcSubst: func(ps *syntax.ProcSubst) (string, error) {
			if ps.Op != syntax.CmdIn {
				return unknownMark, nil
			}
			if tok, seen := w.procSubsts[ps]; seen {
				return tok, nil
			}
			w.procSubsts[ps] = unknownMark
			text, ok := w.outputs(ps.Stmts)
			if !ok {
				return unknownMark, nil
			}
			w.procs = append(w.procs, text)
			w.procSubsts[ps] = procToken(len(w.procs) - 1)
			return w.procSubsts[ps], nil
		},
	}
}

// procToken names the static output of the i-th <(...) substitution.
func procToken(i int) string { return fmt.Sprintf("\uE001%d\uE001", i) }

// procText returns the text a <(...) token stands for.
func (w *guardWalk) procText(tok string) (string, bool) {
	for i, t := range w.procs {
		if tok == procToken(i) {
			return t, true
		}
	}
	return "", false
}

// fields expands words as the arguments of a command. A word that does
// not expand statically becomes unknownMark; the fields are capped at
// guardMaxFields.
func (w *guardWalk) fields(words []*syntax.Word) []string {
	var out []string
	cfg := w.config()
	for _, word := range words {
		n := len(out)
		for f, err := range expand.FieldsSeq(cfg, word) {
			if err != nil {
				out = append(out[:n], unknownMark)
				break
			}
			if len(out) >= guardMaxFields {
				return out
			}
			out = append(out, f)
		}
	}
	return out
}

// literal expands one word as an assignment's value or a redirection's
// target; ok is false when any of it is unknown.
func (w *guardWalk) literal(word *syntax.Word) (string, bool) {
	if word == nil {
		return "", true
	}
	s, err := expand.Literal(w.config(), word)
	if err != nil {
		return unknownMark, false
	}
	return s, !strings.Contains(s, unknownMark)
}

// document expands a here-document's body.
func (w *guardWalk) document(word *syntax.Word) (string, bool) {
	if word == nil {
		return "", true
	}
	s, err := expand.Document(w.config(), word)
	if err != nil {
		return "", false
	}
	return s, !strings.Contains(s, unknownMark)
}

// outputs is the static output of a list of statements (a $(...) body).
func (w *guardWalk) outputs(stmts []*syntax.Stmt) (string, bool) {
	var b strings.Builder
	for _, s := range stmts {
		out, ok := w.output(s, 0)
		if !ok {
			return "", false
		}
		b.WriteString(out)
		if b.Len() > guardMaxText {
			return "", false
		}
	}
	return b.String(), true
}

// output is what a statement writes to its standard output, when that is
// known before it runs: echo, printf, cat of a known input, base64 -d of a
// known input, and pipelines of those.
func (w *guardWalk) output(s *syntax.Stmt, depth int) (string, bool) {
	if s == nil || depth > guardMaxDepth {
		return "", false
	}
	switch c := s.Cmd.(type) {
	case *syntax.BinaryCmd:
		if c.Op != syntax.Pipe && c.Op != syntax.PipeAll {
			return "", false
		}
		left, ok := w.output(c.X, depth+1)
		if !ok {
			return "", false
		}
		w.setStdin(c.Y, left)
		return w.output(c.Y, depth+1)
	case *syntax.CallExpr:
		if len(c.Args) == 0 {
			return "", false
		}
		argv := w.fields(c.Args)
		for _, a := range argv {
			if strings.Contains(a, unknownMark) {
				return "", false
			}
		}
		in, haveIn := w.stdinOf(s)
		return staticOutput(argv, in, haveIn)
	}
	return "", false
}

// staticOutput runs the few commands whose output the guard can compute.
func staticOutput(argv []string, in string, haveIn bool) (string, bool) {
	if len(argv) == 0 {
		return "", false
	}
	switch baseName(argv[0]) {
	case "echo":
		return echoOutput(argv[1:]), true
	case "printf":
		if len(argv) < 2 {
			return "", false
		}
		return printfOutput(argv[1], argv[2:])
	case "cat":
		if len(argv) == 1 || (len(argv) == 2 && argv[1] == "-") {
			return in, haveIn
		}
	case "base64":
		if !haveIn {
			return "", false
		}
		for _, a := range argv[1:] {
			if a == "-d" || a == "--decode" || a == "-D" || a == "-di" || a == "-id" {
				return decodeBase64(in)
			}
		}
	}
	return "", false
}

func echoOutput(args []string) string {
	newline, escapes := true, false
	for len(args) > 0 && len(args[0]) > 1 && args[0][0] == '-' && strings.Trim(args[0][1:], "neE") == "" {
		for _, c := range args[0][1:] {
			switch c {
			case 'n':
				newline = false
			case 'e':
				escapes = true
			case 'E':
				escapes = false
			}
		}
		args = args[1:]
	}
	out := strings.Join(args, " ")
	if escapes {
		if s, _, err := expand.Format(nil, strings.ReplaceAll(out, "%", "%%"), nil); err == nil {
			out = s
		}
	}
	if newline {
		out += "\n"
	}
	return out
}

// printfOutput applies format to args as printf does, reusing the format
// while arguments remain.
func printfOutput(format string, args []string) (string, bool) {
	if format == "--" {
		return "", false
	}
	var b strings.Builder
	for {
		s, n, err := expand.Format(nil, format, args)
		if err != nil {
			return "", false
		}
		b.WriteString(s)
		if b.Len() > guardMaxText {
			return "", false
		}
		if n == 0 || n >= len(args) {
			return b.String(), true
		}
		args = args[n:]
	}
}

func decodeBase64(in string) (string, bool) {
	clean := strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, in)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(clean); err == nil {
			return string(b), true
		}
	}
	return "", false
}

// guardEnv is the expansion environment: the variables assigned earlier
// in the command, HOME, and unknownMark for everything else (so that an
// unset "$dir/" is not taken for "/").
type guardEnv struct{ w *guardWalk }

func (e guardEnv) Get(name string) expand.Variable {
	switch {
	case name == "IFS":
		return expand.Variable{}
	case name == "HOME" && e.w.g.home != "":
		return expand.Variable{Set: true, Kind: expand.String, Str: e.w.g.home}
	case name == "PWD" && e.w.cwd != "":
		return expand.Variable{Set: true, Kind: expand.String, Str: e.w.cwd}
	}
	if v, ok := e.w.vars[name]; ok {
		if v.arr {
			return expand.Variable{Set: true, Kind: expand.Indexed, List: v.list}
		}
		return expand.Variable{Set: true, Kind: expand.String, Str: v.str}
	}
	// "HOME user" is ~user: unknown, and never looked up.
	return expand.Variable{Set: true, Kind: expand.String, Str: unknownMark}
}

func (e guardEnv) Each(fn func(string, expand.Variable) bool) {
	for name := range e.w.vars {
		if !fn(name, e.Get(name)) {
			return
		}
	}
}

// crude checks a command the parser refused: it is split into simple
// commands at the shell's operators and into words at blanks, honouring
// quotes and backslashes, and each is checked as a simple command.
func (w *guardWalk) crude(src string, depth int) {
	if forkBombText(src) {
		w.refuse(RuleForkBomb, "it defines a function that pipes copies of itself into each other: a fork bomb", []string{src})
		return
	}
	for _, seg := range crudeSplit(src) {
		var argv, raw []string
		for i := 0; i < len(seg); i++ {
			f := seg[i]
			if f == crudeRedirOut || f == crudeRedirIn {
				if i+1 < len(seg) && f == crudeRedirOut {
					if dev, bad := w.device(seg[i+1]); bad {
						w.refuse(RuleWriteToDevice, fmt.Sprintf("it writes into the device %s", dev), []string{">", seg[i+1]})
						return
					}
				}
				i++
				continue
			}
			argv = append(argv, strings.ReplaceAll(f, "$", ""))
			raw = append(raw, f)
		}
		// Checked with the $ signs dropped (r$@m is rm) and as written: a
		// script handed to bash -c or eval must be checked as it is.
		if len(argv) > 0 {
			w.argv(argv, "", false, depth)
		}
		if w.found == nil && len(raw) > 0 && !slices.Equal(raw, argv) {
			w.argv(raw, "", false, depth)
		}
		if w.found != nil {
			return
		}
	}
}

// Redirection operators in crudeSplit's words.
const (
	crudeRedirOut = "\x00>"
	crudeRedirIn  = "\x00<"
)

// crudeSplit splits src into simple commands of words: quotes group and
// are removed, a backslash escapes the next character, and ; & | ( ) { }
// ` and newlines outside quotes end a command.
func crudeSplit(src string) [][]string {
	var segs [][]string
	var seg []string
	var word strings.Builder
	inWord := false
	endWord := func() {
		if inWord {
			seg = append(seg, word.String())
			word.Reset()
			inWord = false
		}
	}
	endSeg := func() {
		endWord()
		if len(seg) > 0 {
			segs = append(segs, seg)
			seg = nil
		}
	}
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(src) {
				i++
				word.WriteByte(src[i])
			} else {
				word.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == '\\':
			if i+1 < len(src) {
				i++
				if src[i] != '\n' {
					word.WriteByte(src[i])
					inWord = true
				}
			}
		case c == ' ' || c == '\t':
			endWord()
		case c == '>' || c == '<':
			if strings.Trim(word.String(), "0123456789&") == "" {
				word.Reset() // 2>, &>: the descriptor is part of the operator
				inWord = false
			}
			endWord()
			for i+1 < len(src) && strings.IndexByte("<>|&", src[i+1]) >= 0 {
				i++
			}
			if c == '>' {
				seg = append(seg, crudeRedirOut)
			} else {
				seg = append(seg, crudeRedirIn)
			}
		case strings.IndexByte(";&|(){}`\n", c) >= 0:
			if c == '&' && i+1 < len(src) && src[i+1] == '>' {
				endWord()
				continue // &>: a redirection, not a command's end
			}
			endSeg()
		default:
			word.WriteByte(c)
			inWord = true
		}
	}
	endSeg()
	return segs
}

// forkBombText spots the classic fork bomb's shape in unparsed text:
// NAME(){ NAME|NAME& }.
func forkBombText(src string) bool {
	s := strings.Join(strings.Fields(src), "")
	i := strings.Index(s, "(){")
	if i <= 0 {
		return false
	}
	name := s[:i]
	if j := strings.LastIndexAny(name, ";&|\n"); j >= 0 {
		name = name[j+1:]
	}
	return name != "" && strings.Contains(s[i:], name+"|"+name+"&")
}
