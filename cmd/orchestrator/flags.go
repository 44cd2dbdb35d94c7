package main

// flagNames are a command's flags: those taking a value, and switches.
type flagNames struct {
	values, bools []string
}

// runValueFlags and runBoolFlags are the flags of run and resume.
var (
	runValueFlags = []string{"workspace", "model", "config", "max-rounds", "log-level", "nats", "placement", "ask-via", "changes", "creds"}
	runBoolFlags  = []string{"json", "keep-checkpoints", "yes", "ephemeral", "quiet"}
)

// commandFlags lists the flags of each command (by help topic). The
// commands parse with them, and a test checks that each command's help
// names every one.
var commandFlags = map[string]flagNames{
	"run":           {runValueFlags, runBoolFlags},
	"resume":        {runValueFlags, runBoolFlags},
	"demo":          {[]string{"workspace", "nodes"}, []string{"keep", "in-place"}},
	"watch":         {[]string{"nats", "run", "config", "web", "creds", "http-token-file"}, []string{"from-start", "json", "follow", "interactive", "http-public", "all"}},
	"serve":         {[]string{"listen", "store", "cluster", "cluster-listen", "routes", "name", "config", "http", "monitor", "auth", "http-token-file"}, []string{"ephemeral", "http-public", "monitor-public", "no-auth"}},
	"mcp":           {[]string{"workspace", "config", "model", "nats", "http", "creds", "http-token-file"}, []string{"http-public", "no-auth"}},
	"config print":  {[]string{"workspace", "config", "model", "nats"}, []string{"json"}},
	"auth init":     {[]string{"config"}, nil},
	"auth node":     {[]string{"dir", "kinds"}, nil},
	"auth revoke":   {[]string{"dir", "nats", "config"}, nil},
	"auth list":     {[]string{"dir"}, nil},
	"sandbox check": {[]string{"workspace", "config"}, nil},
	"tools list":    {[]string{"workspace", "config"}, nil},
	"tools call":    {[]string{"workspace", "script", "config"}, []string{"json"}},
}

// flagsOf is a flag set for the command of help topic topic.
func flagsOf(topic string) *flagSet {
	f := commandFlags[topic]
	return newFlagSet(f.values, f.bools)
}
