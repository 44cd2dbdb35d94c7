package mcp

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strings"
	"sync"
)

// Prefix starts the name of every MCP tool: mcp__<server>__<tool>.
const Prefix = "mcp__"

// maxToolName is the longest function name model APIs accept.
const maxToolName = 64

// serverName is what a configured server may be called: it becomes part
// of tool names, so letters, digits, "-" and single "_" only.
var serverName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]|_[A-Za-z0-9-])*$`) })

// CheckServerName reports why name cannot name a server, or nil.
func CheckServerName(name string) error {
	if len(name) > 32 || !serverName().MatchString(name) {
		return fmt.Errorf("server name %q: use 1-32 letters, digits, '-' or single '_', starting with a letter or digit", name)
	}
	return nil
}

// ToolName is the name an MCP server's tool gets in troupe:
// mcp__<server>__<tool>, with characters model APIs refuse in names made
// "_", and cut to 64 characters with a hash of the original name when
// longer, so that distinct tools keep distinct names.
func ToolName(server, tool string) string {
	var b strings.Builder
	for _, r := range tool {
		if r < 0x80 && (r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	name := Prefix + server + "__" + b.String()
	if len(name) <= maxToolName && b.String() == tool {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(tool))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	if len(name)+len(suffix) > maxToolName {
		name = name[:maxToolName-len(suffix)]
	}
	return name + suffix
}

// SplitToolName returns the server of an MCP tool name, and false for a
// name that is not one.
func SplitToolName(name string) (server string, ok bool) {
	rest, found := strings.CutPrefix(name, Prefix)
	if !found {
		return "", false
	}
	server, _, found = strings.Cut(rest, "__")
	return server, found && server != ""
}
