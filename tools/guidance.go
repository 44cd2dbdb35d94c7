package tools

import (
	"fmt"
	"slices"
	"strings"
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

	var routing []string
	if has(NameFindFiles) {
		routing = append(routing, "Find files by name or path pattern with find_files.")
	}
	if has(NameGrep) {
		routing = append(routing, "Find where something is written with grep; it lists matching files by default.")
	}
	if has(NameListDir) {
		routing = append(routing, "See a directory's layout with list_dir.")
	}
	if has(NameReadFile) {
		routing = append(routing, "Read file contents with read_file; use offset/limit or ranges for the part you need.")
	}
	if has(NameShell) {
		var own []string
		for _, n := range []string{NameReadFile, NameGrep, NameFindFiles, NameListDir, NameEditFile} {
			if has(n) {
				own = append(own, n)
			}
		}
		line := "Use shell to build, test and run programs"
		if len(own) > 0 {
			line += fmt.Sprintf(", not to read, search or edit files: %s do that with less output", strings.Join(own, ", "))
		}
		routing = append(routing, line+".")
		routing = append(routing, "For several commands that build on each other (cd, exported variables, an activated virtualenv), give shell the same session name: the shell persists between calls.")
		if has(NameJobOutput, NameJobKill) {
			routing = append(routing, "Start long-running processes (a dev server, a watcher) with shell background: true, then read them with job_output (wait: N instead of polling) and stop them with job_kill.")
		}
	}
	switch {
	case has(NameWebSearch, NameWebFetch):
		routing = append(routing, "Look things up on the web with web_search, then read the pages that matter with web_fetch; give web_fetch a prompt saying what you need, so only the answer comes back.")
	case has(NameWebFetch):
		routing = append(routing, "Read a web page you know the address of with web_fetch; give it a prompt saying what you need, so only the answer comes back.")
	}
	if has(NameDelegate) {
		routing = append(routing, "Hand off self-contained sub-tasks with delegate: explore agents for read-only questions over the code, planner for a plan, worker for changes. Give each a precise task and the context it needs; they do not see your conversation.")
	}
	section(&b, "Which tool", routing)

	what := "files to read, patterns to search"
	if has(NameDelegate) {
		what += ", sub-tasks to hand off"
	}
	parallel := "When you need several independent results (" + what + "), request all the calls in the same turn: they run in parallel."
	for _, s := range reg.Specs() {
		if !s.ReadOnly {
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
	if has(NameEditFile) {
		edit = append(edit, "edit_file replaces old_string with new_string; old_string must match exactly once (include a few surrounding lines), or set replace_all. It answers with a one-line confirmation, not the file.")
	}
	if has(NameApplyPatch) {
		edit = append(edit, "apply_patch applies a multi-file patch atomically: all files or none.")
	}
	if has(NameWriteFile) {
		edit = append(edit, "write_file is for new files or complete rewrites; prefer edit_file for changes.")
	}
	section(&b, "Editing", edit)

	section(&b, "Output size", []string{
		"Tool outputs are kept small on purpose and capped. When an output is cut, its last line says what was left out and how to get it (an offset, a narrower call, or a saved file to read).",
		"Ask for what you need: a line range rather than a whole file, files mode before content mode.",
	})
	return b.String()
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
