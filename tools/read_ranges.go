package tools

import (
	"github.com/google/jsonschema-go/jsonschema"
)

// normalize reduces read_file's ways of choosing lines to offset/limit or
// spans: start_line is offset, end_line sets limit, ranges become spans. A
// contradiction is an error result naming the fields; ok is false then.
// (The bounds of each range are checked by readRanges.)
func (p *ReadFileParams) normalize() (Result, bool) {
	if p.StartLine != 0 {
		if p.Offset != 0 && p.Offset != p.StartLine {
			return Errorf("give start_line or offset, not both: start_line is another name for offset (got start_line=%d, offset=%d)", p.StartLine, p.Offset), false
		}
		p.Offset = p.StartLine
	}
	if len(p.Ranges) > 0 {
		if p.Offset != 0 || p.EndLine != 0 {
			return Errorf("ranges already say which lines to read: give them without offset, start_line or end_line"), false
		}
		for i, r := range p.Ranges {
			if len(r) != 2 {
				return Errorf("ranges[%d]: want [start, end], two line numbers, got %d", i, len(r)), false
			}
			p.spans = append(p.spans, readSpan{Start: r[0], End: r[1]})
		}
		return Result{}, true
	}
	if p.EndLine != 0 {
		start := max(p.Offset, 1)
		if p.EndLine < start {
			return Errorf("end_line %d is before the first line to read, %d: end_line is the last line to show, inclusive", p.EndLine, start), false
		}
		n := p.EndLine - start + 1
		if p.Limit != 0 && p.Limit != n {
			return Errorf("give end_line or limit, not both: end_line=%d from line %d means limit=%d, but limit=%d", p.EndLine, start, n, p.Limit), false
		}
		p.Limit = n
	}
	return Result{}, true
}

// readRangesSchema makes ranges a plain array of [start, end] pairs of
// 1-based line numbers (the generator emits nullable arrays), so that the
// framework's validation reaches each number.
func readRangesSchema(s *jsonschema.Schema) {
	p := s.Properties["ranges"]
	if p == nil {
		return
	}
	p.Type, p.Types = "array", nil
	if pair := p.Items; pair != nil {
		two, one := 2, 1.0
		pair.Type, pair.Types = "array", nil
		pair.MinItems, pair.MaxItems = &two, &two
		if pair.Items != nil {
			pair.Items.Minimum = &one
		}
	}
}
