// Command mcptestserver serves package mcptest's test MCP server on
// stdin/stdout, for tests that configure it as a command
// (mcptest.Build builds it).
package main

import "github.com/troupe-ai/troupe/tools/mcp/mcptest"

func main() { mcptest.Serve() }
