// Package httpguard stands in front of every HTTP surface troupe serves
// (the web view, /metrics, MCP over HTTP). It decides where a server may
// listen (loopback unless the user says --http-public, and beyond loopback
// only with a token), refuses a Host header that is not the listener's on
// a loopback listener (a DNS-rebinding page names its own host), checks
// Origin on state-changing requests, and, with a token, lets a request in
// only with it: as a bearer token (curl, Prometheus's authorization
// setting, MCP clients) or as the cookie a browser gets by opening a URL
// with ?token= once (HttpOnly, SameSite=Strict). Limit caps the
// long-lived requests of one endpoint (the web view's event streams).
package httpguard
