package mcp

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// A stdio server that takes the directory it serves as an argument (the
// reference filesystem server: [node, .../server-filesystem, DIR]; many
// take --root DIR) would, with the workspace's path written there, serve
// the workspace from every instance: a worktree instance's writes there
// are refused by its sandbox and it never sees its agent's tree. So
// ${TROUPE_TREE}, in a server's command arguments or env values, is
// replaced by the tree the instance serves, and the server's environment
// holds TROUPE_TREE too: the run's instance gets the workspace, an
// agent's instance its worktree (as its commands see it). Nothing else
// can set it: it names only the directory the instance already works in,
// and is sandboxed to, so it widens nothing. It cannot name the program:
// the tree is the agent's to write, and troupe never runs a program the
// agent wrote.

// TreeVar is the variable of the tree an instance serves: set in a stdio
// server's environment, and ${TreeVar} in its command arguments and env
// values is replaced by it.
const TreeVar = "TROUPE_TREE"

// TreeRef is how a config writes the tree: ${TROUPE_TREE}.
const TreeRef = "${" + TreeVar + "}"

// troupeRef matches the references of troupe's own namespace in a command
// argument: ${TROUPE_...}; any but TreeRef is a mistake (a typo).
var troupeRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{TROUPE_[A-Za-z0-9_]*\}`) })

// CheckTreeRefs reports where a stdio server's command or env misuses
// ${TROUPE_TREE}: in the program, an unknown ${TROUPE_...} in an
// argument, or TROUPE_TREE set in env (troupe sets it). The error starts
// with the key ("command[2]: ...", "env.TROUPE_TREE: ...").
func CheckTreeRefs(command []string, env map[string]string) error {
	if len(command) > 0 && strings.Contains(command[0], TreeRef) {
		return fmt.Errorf("command[0]: %s cannot name the program: the tree is the agent's to write, and troupe never runs a program from it", TreeRef)
	}
	for i, arg := range command {
		for _, ref := range troupeRef().FindAllString(arg, -1) {
			if ref != TreeRef {
				return fmt.Errorf("command[%d]: unknown placeholder %s; the one troupe fills in is %s (the tree the server's instance serves)", i, ref, TreeRef)
			}
		}
	}
	if _, set := env[TreeVar]; set {
		return fmt.Errorf("env.%s: troupe sets it to the tree the server's instance serves; write %s in a value to use it", TreeVar, TreeRef)
	}
	return nil
}

// usesTree reports whether the command or env name the tree.
func usesTree(command []string, env map[string]string) bool {
	for _, s := range command {
		if strings.Contains(s, TreeRef) {
			return true
		}
	}
	for _, v := range env {
		if strings.Contains(v, TreeRef) {
			return true
		}
	}
	return false
}

// checkTree is Validate's part for the tree references.
func (c Config) checkTree() error {
	if err := CheckTreeRefs(c.Command, c.Env); err != nil {
		return err
	}
	for _, k := range sortedNames(c.Headers) {
		if strings.Contains(c.Headers[k], TreeRef) {
			return fmt.Errorf("headers.%s: %s is for stdio servers (command): an HTTP server serves no tree", k, TreeRef)
		}
	}
	if c.Dir == "" && usesTree(c.Command, c.Env) {
		return errors.New("command or env name " + TreeRef + " but the server has no directory (Dir)")
	}
	return nil
}

// withTree is the command and env of an instance serving tree: every
// ${TROUPE_TREE} replaced by it, and TROUPE_TREE set in env.
func withTree(command []string, env map[string]string, tree string) ([]string, map[string]string) {
	argv := make([]string, len(command))
	for i, s := range command {
		argv[i] = strings.ReplaceAll(s, TreeRef, tree)
	}
	out := make(map[string]string, len(env)+1)
	for k, v := range env {
		out[k] = strings.ReplaceAll(v, TreeRef, tree)
	}
	if tree != "" {
		out[TreeVar] = tree
	}
	return argv, out
}

func sortedNames(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
