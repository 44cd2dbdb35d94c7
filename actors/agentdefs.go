package actors

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/troupe-ai/troupe/llm"
	"github.com/troupe-ai/troupe/tools"

	agenttools "github.com/troupe-ai/troupe/tools/agent"
	"github.com/troupe-ai/troupe/tools/builtin"
	"github.com/troupe-ai/troupe/tools/shell"
	"github.com/troupe-ai/troupe/tools/web"
	"gopkg.in/yaml.v3"
)

// agentDef is the front matter of an agent definition file, the format
// Claude Code uses for sub-agents: name, description, tools, model; the
// Markdown body is the system prompt.
type agentDef struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Tools       any    `yaml:"tools"` // "Read, Grep" or [read_file, grep]
	Model       string `yaml:"model"`
	Color       string `yaml:"color"` // Claude Code's; ignored
}

// claudeTools maps Claude Code's tool names to ours.
var claudeTools = map[string][]string{
	"read": {tools.NameReadFile}, "grep": {tools.NameGrep}, "glob": {tools.NameFindFiles}, "ls": {tools.NameListDir},
	"bash": {shell.NameShell}, "edit": {tools.NameEditFile}, "multiedit": {tools.NameEditFile}, "write": {tools.NameWriteFile},
	"todowrite": {tools.NameTodo}, "task": {agenttools.NameDelegate, agenttools.NameCheckAgent}, "notebookedit": {tools.NameEditFile},
	"webfetch": {web.NameWebFetch}, "websearch": {web.NameWebSearch},
}

// LoadAgentDefs reads the *.md agent definitions of dirs (missing
// directories are skipped; later directories win on name clashes) and
// returns them as kinds, sorted by name.
func LoadAgentDefs(dirs ...string) ([]Kind, error) {
	byName := map[string]Kind{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("agent definitions %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			data, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("agent definition %s: %w", p, err)
			}
			k, err := ParseAgentDef(data)
			if err != nil {
				return nil, fmt.Errorf("agent definition %s: %w", p, err)
			}
			byName[k.Name] = k
		}
	}
	out := make([]Kind, 0, len(byName))
	for _, k := range byName {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ParseAgentDef parses one agent definition file.
func ParseAgentDef(data []byte) (Kind, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !strings.HasPrefix(text, "---\n") {
		return Kind{}, errors.New("no front matter: the file must start with a line '---'")
	}
	rest := text[4:]
	end := strings.Index(rest, "\n---")
	if end < 0 {
		return Kind{}, errors.New("front matter is not closed by a line '---'")
	}
	var d agentDef
	if err := yaml.Unmarshal([]byte(rest[:end]), &d); err != nil {
		return Kind{}, fmt.Errorf("front matter: %w", err)
	}
	body := strings.TrimSpace(strings.TrimPrefix(rest[end+4:], "-"))
	if d.Name == "" {
		return Kind{}, errors.New("front matter: name is required")
	}
	if strings.ContainsAny(d.Name, " .*>/") {
		return Kind{}, fmt.Errorf("front matter: name %q must be one word (letters, digits, - or _)", d.Name)
	}
	names, err := defTools(d.Tools)
	if err != nil {
		return Kind{}, err
	}
	k := Kind{Name: d.Name, Description: d.Description, Tools: names, Prompt: body, ModelRole: llm.RoleParent}
	switch strings.ToLower(strings.TrimSpace(d.Model)) {
	case "", "inherit", "sonnet", "opus":
	case "haiku", llm.RoleCheap:
		k.ModelRole = llm.RoleCheap
	case llm.RoleDefault:
		k.ModelRole = llm.RoleDefault
	default:
		k.Model = strings.TrimSpace(d.Model)
	}
	k.ReadOnly = !slices.ContainsFunc(k.Tools, func(t string) bool { return slices.Contains(builtin.MutatingToolNames(), t) })
	k.MayDelegate = slices.Contains(k.Tools, agenttools.NameDelegate)
	return k, nil
}

// defTools reads the tools field: omitted means a worker's tools; names may
// be ours or Claude Code's.
func defTools(v any) ([]string, error) {
	var raw []string
	switch t := v.(type) {
	case nil:
		return builtin.ForKind(KindWorker), nil
	case string:
		for _, s := range strings.Split(t, ",") {
			if s = strings.TrimSpace(s); s != "" {
				raw = append(raw, s)
			}
		}
	case []any:
		for _, s := range t {
			raw = append(raw, strings.TrimSpace(fmt.Sprint(s)))
		}
	default:
		return nil, fmt.Errorf("front matter: tools must be a list or a comma-separated string")
	}
	var out []string
	for _, name := range raw {
		mapped, ok := claudeTools[strings.ToLower(name)]
		if !ok {
			mapped = []string{name}
		}
		for _, m := range mapped {
			if !slices.Contains(out, m) {
				out = append(out, m)
			}
		}
	}
	if !slices.Contains(out, tools.NameThink) {
		out = append(out, tools.NameThink)
	}
	slices.Sort(out)
	return out, nil
}
