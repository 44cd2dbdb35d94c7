// Package mcp connects troupe to MCP (Model Context Protocol) servers
// through the official Go SDK (github.com/modelcontextprotocol/go-sdk) and
// presents their tools as troupe tools.
//
// A Server is one configured server: a command run over stdio, or a
// streamable HTTP endpoint. It starts on first need (Tools, or a call) and
// is shared by the agents of a run that work in its directory; it
// implements tools.ToolSource, and whoever created it closes it when the
// run ends. An agent working in a worktree of its own calls its own
// instance of a stdio server instead, started in that tree, sandboxed to
// it and closed with the agent's session (worktree.go); Limit bounds how
// many such instances run at once. A stdio server runs in
// a process group of its own, with the tools' allow-listed environment
// (shell.ChildEnv, never our secrets) plus its configured env, and dies
// with our process.
//
// Each tool is named mcp__<server>__<tool> (ToolName) and tiered
// on-demand: when an agent's optional tools overflow the definition
// budget it sees them by name and loads them with search_tools. Input
// schemas are sanitised into what OpenAI-style function parameters accept
// (SanitizeSchema); a tool whose schema cannot be is left out (Skipped).
// Arguments are checked against the sanitised schema before the call, so
// a bad call gets an error naming the field.
//
// Every failure is an error result, never a stuck agent: a server that
// will not start, an error the server reports, a call past its timeout (a
// stdio server is killed; an HTTP call is cancelled), a crash mid-call, a
// message over MaxMessageBytes or a broken protocol. After a crash, a kill
// or a broken connection the next call starts the server again. Results
// are rendered as text with control characters and escape sequences
// removed; images, audio and binary resources are summarised in a line;
// the executor then truncates and spills as for any tool.
package mcp
