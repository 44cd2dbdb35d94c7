package watch

import (
	"path"
	"strings"
)

// shellFileTools maps the programs that do a file tool's job to that tool:
// reading, searching, finding, listing and writing files. A shell call
// led by one of them is a shell call spent on a file operation.
var shellFileTools = map[string]string{
	"cat": "read_file", "head": "read_file", "tail": "read_file", "less": "read_file",
	"more": "read_file", "nl": "read_file", "sed": "read_file",
	"grep": "grep", "egrep": "grep", "fgrep": "grep", "rg": "grep", "ag": "grep", "ack": "grep",
	"find": "find_files", "fd": "find_files", "fdfind": "find_files", "locate": "find_files",
	"ls": "list_dir", "tree": "list_dir",
	"tee": "write_file", "touch": "write_file",
}

// ShellFileOp says whether a shell command is a file operation that a
// file tool does better, and which tool: its leading program (after `cd
// DIR &&` steps and VAR=value assignments, path stripped) is cat, head,
// tail, less, more, nl or sed (read_file); grep, egrep, fgrep, rg, ag or
// ack (grep); find, fd, fdfind or locate (find_files); ls or tree
// (list_dir); tee or touch, or echo, printf or cat writing into a file
// with > or >> (write_file). `go test ./... | grep FAIL` is led by go: not
// a file operation.
func ShellFileOp(command string) (tool string, ok bool) {
	for _, seg := range shellSegments(command) {
		words := strings.Fields(seg.text)
		for len(words) > 0 && isAssignment(words[0]) {
			words = words[1:]
		}
		if len(words) == 0 {
			continue
		}
		prog := path.Base(strings.Trim(words[0], `"'`))
		if prog == "cd" || prog == "pushd" {
			continue // the step before the command that counts
		}
		if seg.redirect && (prog == "echo" || prog == "printf" || prog == "cat") {
			return "write_file", true
		}
		tool, ok := shellFileTools[prog]
		return tool, ok
	}
	return "", false
}

// segment is one simple command of a command line, and whether it
// redirects its output into a file.
type segment struct {
	text     string
	redirect bool
}

// shellSegments splits a command line at &&, ||, ;, | and line ends
// outside quotes; enough shell to find the leading program.
func shellSegments(cmd string) []segment {
	var out []segment
	var cur strings.Builder
	redirect := false
	var quote byte
	flush := func() {
		out = append(out, segment{text: cur.String(), redirect: redirect})
		cur.Reset()
		redirect = false
	}
	for i := 0; i < len(cmd); i++ {
		c := cmd[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' && i+1 < len(cmd) {
				cur.WriteByte(c)
				i++
				c = cmd[i]
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '\\' && i+1 < len(cmd):
			cur.WriteByte(c)
			i++
			c = cmd[i]
		case c == ';' || c == '\n' || c == '|' || c == '&' && i+1 < len(cmd) && cmd[i+1] == '&':
			if i+1 < len(cmd) && (cmd[i+1] == '|' || cmd[i+1] == '&') {
				i++
			}
			flush()
			continue
		case c == '>':
			next := byte(0)
			if i+1 < len(cmd) {
				next = cmd[i+1]
			}
			if next == '>' && i+2 < len(cmd) {
				next = cmd[i+2]
			}
			if next != '&' && !(i > 0 && cmd[i-1] == '2') {
				redirect = true // into a file, not onto another descriptor or stderr
			}
		}
		cur.WriteByte(c)
	}
	flush()
	return out
}

// isAssignment reports whether w is a VAR=value word.
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, r := range name {
		if r != '_' && (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (i == 0 || r < '0' || r > '9') {
			return false
		}
	}
	return true
}
