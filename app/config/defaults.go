package config

import (
	"bytes"

	"github.com/troupe-ai/troupe/configs"
)

// defaultYAML is configs/default.yaml with its comments blanked out:
// three quarters of the file is comment, which the YAML scanner would
// otherwise read on every start of every command (about half of
// decoding it). Lines keep their numbers. TestDefaultsWithoutComments
// checks that it decodes to the same configuration as the file.
func defaultYAML() []byte { return stripComments(configs.Default) }

// stripComments blanks the comments of YAML made of plain and quoted
// scalars on one line each (no block scalars, whose lines are content):
// a line starting with # and, on other lines, a # after blank space
// outside quotes, to the end of the line.
func stripComments(src []byte) []byte {
	out := make([]byte, 0, len(src)/3)
	for len(src) > 0 {
		line := src
		if i := bytes.IndexByte(src, '\n'); i >= 0 {
			line, src = src[:i], src[i+1:]
		} else {
			src = nil
		}
		out = append(out, bytes.TrimRight(line[:commentStart(line)], " \t")...)
		out = append(out, '\n')
	}
	return out
}

// commentStart is where line's comment starts, or len(line).
func commentStart(line []byte) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '"' && c == '\\':
			i++ // an escaped character
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return i
		}
	}
	return len(line)
}
