package shell

// ChildEnv builds the environment of a process the tools start (shell
// commands, MCP servers) from env, usually os.Environ(): the variables of
// the built-in allow-list (PATH, HOME, LANG, GO*, ...) plus the names or
// "PREFIX*" patterns in extras, never a name that looks like it holds a
// secret (KEY, TOKEN, PASSWORD, AUTH, cloud credentials ...). A caller
// that must pass a secret on purpose (an MCP server's configured env)
// appends it to the result itself.
func ChildEnv(env, extras []string) []string { return childEnv(env, extras) }
