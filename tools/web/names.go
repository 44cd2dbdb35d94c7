// Package web holds the tools that reach beyond the workspace: web_fetch
// (a page as Markdown, or a cheap model's answer about it) and web_search
// (a configured provider: Brave, Tavily or SearXNG). Only the public
// internet unless configured otherwise: web_fetch resolves a host itself
// and checks every address it dials, redirects and DNS answers included.
// Its pages are cached for a fixed time (Cache), not by rounds.
package web

// Names of the web tools.
const (
	NameWebFetch  = "web_fetch"
	NameWebSearch = "web_search"
)

// ToolNames are the web tools.
func ToolNames() []string { return []string{NameWebFetch, NameWebSearch} }
