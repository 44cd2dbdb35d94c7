package tools

import (
	"fmt"
	"slices"
	"strings"
)

// The sections of the tool guidance that tools add lines to
// (GuidanceLine.Section).
const (
	SectionWhichTool = "Which tool"
	SectionEditing   = "Editing"
)

// Guidance writes the tool-guidance section of a system prompt for an agent
// holding exactly the tools in reg: routing rules, parallel calls, the
// two-step search, the edit workflow and output awareness. A rule that
// names a tool the agent lacks is left out, so prompts never advertise
// tools the actor would refuse.
func Guidance(reg *Registry) string {
	has := func(names ...string) bool {
		for _, n := range names {
			if _, ok := reg.Get(n); !ok {
				return false
			}
		}
		return true
	}
	var b strings.Builder
	b.WriteString("# Using your tools\n\n")
	fmt.Fprintf(&b, "You have these tools: %s.\n", strings.Join(reg.Names(), ", "))

	section(&b, SectionWhichTool, declared(reg, SectionWhichTool, has))

	what := "files to read, patterns to search"
	if slices.ContainsFunc(reg.Specs(), func(s Spec) bool { return s.Spawns != nil }) { // delegate
		what += ", sub-tasks to hand off"
	}
	parallel := "When you need several independent results (" + what + "), request all the calls in the same turn: they run in parallel."
	for _, s := range reg.Specs() {
		if s.Mutates() {
			parallel += " Calls that change the same file run in the order you give them."
			break
		}
	}
	section(&b, "Parallel calls", []string{parallel})
	if has(NameGrep, NameReadFile) {
		locate := "First locate: grep in files mode (the default) returns paths only, newest first."
		if has(NameFindFiles) {
			locate = "First locate: grep in files mode (the default) or find_files returns paths only, newest first."
		}
		section(&b, "Search in two steps", []string{
			locate,
			"Then retrieve: read_file on the few files that matter, or grep in content mode with context_lines when the matching lines themselves answer the question.",
			"Narrow with path, include or type instead of searching the whole tree again.",
		})
	}
	var edit []string
	if has(NameReadFile) && (has(NameEditFile) || has(NameWriteFile) || has(NameApplyPatch)) {
		edit = append(edit, "Read a file before you change it: the edit tools refuse files you have not read, or that changed on disk since you read them.")
	}
	edit = append(edit, declared(reg, SectionEditing, has)...)
	section(&b, SectionEditing, edit)

	section(&b, "Output size", []string{
		"Tool outputs are kept small on purpose and capped. When an output is cut, its last line says what was left out and how to get it (an offset, a narrower call, or a saved file to read).",
		"Ask for what you need: a line range rather than a whole file, files mode before content mode.",
	})
	return b.String()
}

// declared collects the lines reg's tools declare for section, in their
// order (then by tool name), leaving out the empty ones.
func declared(reg *Registry, name string, has func(...string) bool) []string {
	type line struct {
		order int
		tool  string
		text  string
	}
	var ls []line
	for _, s := range reg.Specs() {
		for _, gl := range s.Guidance {
			if gl.Section != name || gl.Text == nil {
				continue
			}
			if t := gl.Text(has); t != "" {
				ls = append(ls, line{gl.Order, s.Name, t})
			}
		}
	}
	slices.SortStableFunc(ls, func(a, b line) int {
		if a.order != b.order {
			return a.order - b.order
		}
		return strings.Compare(a.tool, b.tool)
	})
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.text
	}
	return out
}

func section(b *strings.Builder, title string, lines []string) {
	lines = slices.DeleteFunc(lines, func(s string) bool { return s == "" })
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## %s\n", title)
	for _, l := range lines {
		fmt.Fprintf(b, "- %s\n", l)
	}
}
