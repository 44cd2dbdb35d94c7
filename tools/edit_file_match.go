package tools

import "strings"

// This file is edit_file's fallback when old_string is not in the file
// byte for byte: a match line by line that ignores how lines are indented
// (tabs or spaces, any width) and trailing whitespace, followed by
// re-indenting new_string to the indentation actually found. Models often
// retype code with four spaces where the file has tabs, or lose a level of
// indentation when they quote a nested block.

// lineSpan locates one line of a text: content[start:end] is the line
// without its end-of-line, next is where the following line starts.
type lineSpan struct{ start, end, next int }

func splitLineSpans(content string) []lineSpan {
	var out []lineSpan
	for pos := 0; pos < len(content); {
		nl := strings.IndexByte(content[pos:], '\n')
		if nl < 0 {
			out = append(out, lineSpan{pos, len(content), len(content)})
			break
		}
		end := pos + nl
		if end > pos && content[end-1] == '\r' {
			end--
		}
		out = append(out, lineSpan{pos, end, pos + nl + 1})
		pos += nl + 1
	}
	return out
}

// textLines splits text into lines without their end-of-line; a final
// newline does not start another line.
func textLines(text string) []string {
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// looseMatches finds old in content as a run of whole lines that equal
// old's lines once leading and trailing whitespace is ignored, and gives
// each match repl re-indented to the indentation found there.
func looseMatches(content, old, repl string) []editMatch {
	if strings.TrimSpace(old) == "" {
		return nil
	}
	oldLines := textLines(old)
	keys := make([]string, len(oldLines))
	for i, l := range oldLines {
		keys[i] = strings.TrimSpace(l)
	}
	spans := splitLineSpans(content)
	key := func(i int) string { return strings.TrimSpace(content[spans[i].start:spans[i].end]) }
	withEOL := strings.HasSuffix(old, "\n")
	var out []editMatch
	for i := 0; i+len(keys) <= len(spans); {
		k := 0
		for k < len(keys) && key(i+k) == keys[k] {
			k++
		}
		if k < len(keys) {
			i++
			continue
		}
		found := make([]string, len(keys))
		for j := range found {
			found[j] = content[spans[i+j].start:spans[i+j].end]
		}
		last := spans[i+len(keys)-1]
		end := last.end
		if withEOL {
			end = last.next
		}
		out = append(out, editMatch{start: spans[i].start, end: end, repl: reindent(repl, oldLines, found)})
		i += len(keys)
	}
	return out
}

// leadingWS is the run of spaces and tabs that starts s.
func leadingWS(s string) string {
	return s[:len(s)-len(strings.TrimLeft(s, " \t"))]
}

// indentWidth counts columns, a tab as four.
func indentWidth(ws string) int {
	return len(ws) + 3*strings.Count(ws, "\t")
}

// reindent moves repl from the indentation of oldLines (as the model wrote
// them) to that of found (the file's lines they matched): the base
// indentation is swapped, and each further level written in the model's
// unit is rewritten in the file's unit.
func reindent(repl string, oldLines, found []string) string {
	base := -1
	same := true
	for i, l := range oldLines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if base < 0 {
			base = i
		}
		same = same && leadingWS(l) == leadingWS(found[i])
	}
	if same {
		return repl
	}
	oBase, fBase := leadingWS(oldLines[base]), leadingWS(found[base])
	oUnit, fUnit := indentUnits(oldLines, found, oBase, fBase, repl)
	lines := strings.Split(repl, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == "" {
			lines[i] = strings.TrimLeft(l, " \t")
			continue
		}
		ws := leadingWS(l)
		lines[i] = convertIndent(ws, oBase, fBase, oUnit, fUnit) + l[len(ws):]
	}
	return strings.Join(lines, "\n")
}

// convertIndent maps one indentation from the model's frame to the file's.
func convertIndent(ws, oBase, fBase, oUnit, fUnit string) string {
	if rel, ok := strings.CutPrefix(ws, oBase); ok {
		if oUnit == "" {
			return fBase + rel
		}
		levels, extra := countLevels(rel, oUnit)
		return fBase + strings.Repeat(fUnit, levels) + extra
	}
	// Shallower than the base: remove as many of the file's units.
	if oUnit == "" || fUnit == "" {
		return ws
	}
	up := (indentWidth(oBase) - indentWidth(ws) + indentWidth(oUnit) - 1) / indentWidth(oUnit)
	out := fBase
	for range up {
		trimmed, ok := strings.CutSuffix(out, fUnit)
		if !ok {
			return ws
		}
		out = trimmed
	}
	return out
}

// countLevels counts how many indentation units rel holds, first as
// repeats of unit, then by width for what is left (mixed tabs and
// spaces); leftover columns come back as spaces.
func countLevels(rel, unit string) (int, string) {
	levels := 0
	for strings.HasPrefix(rel, unit) {
		rel = rel[len(unit):]
		levels++
	}
	if rel == "" {
		return levels, ""
	}
	w, u := indentWidth(rel), indentWidth(unit)
	return levels + w/u, strings.Repeat(" ", w%u)
}

// indentUnits finds one level of indentation as the model wrote it
// (oUnit) and as the file has it (fUnit). The best evidence is a matched
// line deeper than the base on both sides; failing that, the model's unit
// is its smallest deeper indentation and the file's is read from the base.
// An empty oUnit means repl has no deeper lines to convert.
func indentUnits(oldLines, found []string, oBase, fBase, repl string) (string, string) {
	var oUnit, fUnit string
	for i, l := range oldLines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		o, f := leadingWS(l), leadingWS(found[i])
		oRel, ok1 := strings.CutPrefix(o, oBase)
		fRel, ok2 := strings.CutPrefix(f, fBase)
		if !ok1 || !ok2 || oRel == "" || fRel == "" {
			continue
		}
		if oUnit == "" || indentWidth(oRel) < indentWidth(oUnit) {
			oUnit, fUnit = oRel, fRel
		}
	}
	if oUnit != "" {
		return commonRoot(oUnit, fUnit)
	}
	for _, l := range append(oldLines, strings.Split(repl, "\n")...) {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if rel, ok := strings.CutPrefix(leadingWS(l), oBase); ok && rel != "" {
			if oUnit == "" || indentWidth(rel) < indentWidth(oUnit) {
				oUnit = rel
			}
		}
	}
	if oUnit == "" {
		// Nothing deeper than the base: only shallower lines, if any, need
		// a unit. Guess one from the base on each side.
		oUnit = rootUnit(oBase)
		fUnit = rootUnit(fBase)
		if oUnit == "" || fUnit == "" {
			return "", ""
		}
		return oUnit, fUnit
	}
	// The file's unit: one level of its base, when the model's base
	// divides into levels; else the unit the file's base is made of.
	if oRoot := rootUnit(oBase); oRoot != "" && fBase != "" {
		levels := len(oBase) / len(oRoot)
		if f := fBase; len(f)%levels == 0 && strings.Repeat(f[:len(f)/levels], levels) == f {
			return oUnit, f[:len(f)/levels]
		}
	}
	if r := rootUnit(fBase); r != "" {
		return oUnit, r
	}
	return oUnit, oUnit
}

// commonRoot reduces a pair of indentations made of the same number of
// repeats (eight spaces and two tabs) to one repeat each.
func commonRoot(a, b string) (string, string) {
	for k := min(len(a), len(b)); k > 1; k-- {
		if len(a)%k == 0 && len(b)%k == 0 &&
			strings.Repeat(a[:len(a)/k], k) == a && strings.Repeat(b[:len(b)/k], k) == b {
			return a[:len(a)/k], b[:len(b)/k]
		}
	}
	return a, b
}

// rootUnit guesses the unit an indentation is made of: a tab, or the
// spaces of one level (four when the width allows it, else two).
func rootUnit(ws string) string {
	switch {
	case ws == "":
		return ""
	case strings.Trim(ws, "\t") == "":
		return "\t"
	case strings.Trim(ws, " ") != "":
		return "" // mixed: no reliable unit
	case len(ws)%4 == 0:
		return "    "
	case len(ws)%2 == 0:
		return "  "
	}
	return " "
}
