// Package setup turns a validated configuration into what both programs
// run with: the team's actor options (models, pricing, budget, kinds,
// tools and their sandbox, the MCP servers of mcp.servers as tool sources
// the program closes when the run or node ends), the redactor of the
// configured secrets, the stream limits, and the OpenTelemetry tracer.
package setup
