package tools

import "context"

// ToolSource supplies tools that are known only once something outside
// the process is asked: an MCP server, whose tools are listed when it
// starts. Sources are started on first need and listed once for the
// agents of a run (a source may still serve an agent that works in a tree
// of its own from an instance of that agent's: tools/mcp does); whoever
// created them closes them when the run (or the node) ends.
type ToolSource interface {
	// Name names the source in logs and errors.
	Name() string
	// For reports whether agents of kind get the source's tools.
	For(kind string) bool
	// Tools lists the source's tools, starting it on the first call;
	// later calls return the same tools. An error means none are
	// available for now.
	Tools(ctx context.Context) ([]Tool, error)
	// Close stops whatever the source started.
	Close() error
}
