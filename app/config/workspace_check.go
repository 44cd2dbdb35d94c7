package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// ErrWorkspaceKey is wrapped by the refusal of a setting a workspace's
// own config file may not make (see workspace_rules.go).
var ErrWorkspaceKey = errors.New("a workspace's own config file, which its agents can write, may not set this")

// whereInstead says where a refused setting may be made.
const whereInstead = "set it in ~/.config/troupe/config.yaml, a file given with --config, or a flag"

// wsRefuse is the error for the key at path, set at line of file.
func wsRefuse(file string, line int, path []string, why string) error {
	return fmt.Errorf("config %s line %d: %s: %w (%s); %s", file, line, strings.Join(path, "."), ErrWorkspaceKey, why, whereInstead)
}

// wsLeaf is a setting a workspace file makes: its path, the line of its
// key and its value's node.
type wsLeaf struct {
	path []string
	line int
	val  *yaml.Node
}

// wsLeaves lists the settings of a workspace file's document, refusing a
// key no rule allows and any ${VAR} (a workspace file reads nothing of
// this process's environment).
func wsLeaves(doc *yaml.Node, file string) ([]wsLeaf, error) {
	if doc.Kind == yaml.DocumentNode {
		if len(doc.Content) == 0 {
			return nil, nil
		}
		doc = doc.Content[0]
	}
	if err := noExpansion(doc, nil, file); err != nil {
		return nil, err
	}
	var out []wsLeaf
	var walk func(n *yaml.Node, path []string) error
	walk = func(n *yaml.Node, path []string) error {
		if n.Kind != yaml.MappingNode {
			return nil
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := append(slices.Clone(path), k.Value)
			if v.Kind == yaml.ScalarNode && slices.Equal(p, []string{"sandbox", "network"}) {
				p = append(p, "default") // network: MODE is short for {default: MODE}
			}
			switch {
			case wsRuleFor(p) != nil:
				out = append(out, wsLeaf{path: p, line: k.Line, val: v})
			case v.Kind == yaml.MappingNode && wsContainer(p):
				if err := walk(v, p); err != nil {
					return err
				}
			default:
				p, line := firstLeaf(v, p, k.Line)
				return wsRefuse(file, line, p, wsWhy(p))
			}
		}
		return nil
	}
	return out, walk(doc, nil)
}

// firstLeaf names the first setting beneath a refused key (nats.url
// rather than nats), with its line.
func firstLeaf(v *yaml.Node, path []string, line int) ([]string, int) {
	for v.Kind == yaml.MappingNode && len(v.Content) >= 2 {
		path = append(path, v.Content[0].Value)
		line, v = v.Content[0].Line, v.Content[1]
	}
	return path, line
}

// keyLine is the line of the key at path in doc (the nearest enclosing
// key's when absent).
func keyLine(doc *yaml.Node, path []string) int {
	n, line := doc, 0
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	for _, p := range path {
		var next *yaml.Node
		for i := 0; n != nil && n.Kind == yaml.MappingNode && i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				line, next = n.Content[i].Line, n.Content[i+1]
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	return line
}

// noExpansion refuses a ${...} in any value beneath n.
func noExpansion(n *yaml.Node, path []string, file string) error {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := noExpansion(n.Content[i+1], append(slices.Clone(path), n.Content[i].Value), file); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if err := noExpansion(c, path, file); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "${") {
			return wsRefuse(file, n.Line, path, "a ${VAR} would read this process's environment")
		}
	}
	return nil
}

// checkWorkspaceValues refuses a setting of leaves that widens what the
// layers under the workspace file set (before) as the file leaves them
// (after); builtin are the built-in kinds, for their tools.
func checkWorkspaceValues(leaves []wsLeaf, file string, before, after Config, builtin map[string]Kind) error {
	bn, err := nodeOf(before)
	if err != nil {
		return err
	}
	an, err := nodeOf(after)
	if err != nil {
		return err
	}
	for _, l := range leaves {
		r := wsRuleFor(l.path)
		b, a := lookup(bn, l.path), lookup(an, l.path)
		if why := wsWidens(*r, l.path, b, a, before, after, builtin); why != "" {
			return wsRefuse(file, l.line, l.path, why)
		}
	}
	return nil
}

// wsWidens says how after (the node at path once the workspace file is
// applied) widens before, or "".
func wsWidens(r wsRule, path []string, before, after *yaml.Node, c, ac Config, builtin map[string]Kind) string {
	bv, av := scalar(before), scalar(after)
	if before == nil && r.dflt != nil {
		bv = r.dflt(c, path)
	}
	switch r.kind {
	case wsLower, wsLowerZero:
		if r.eff != nil {
			if be, ae := r.eff(c), r.eff(ac); mustNumber(ae) > mustNumber(be) {
				return fmt.Sprintf("%s puts %s in effect, over the %s in effect before; it may only lower it", av, ae, be)
			}
			return ""
		}
		b, okb := number(bv)
		a, oka := number(av)
		unlimited := func(x float64) bool { return r.kind == wsLowerZero && x == 0 }
		if !okb || !oka {
			return "not a number to compare with " + bv
		}
		if r.kind == wsLower && !r.zeroOK && a == 0 && b != 0 {
			return fmt.Sprintf("0 is no lower than %s here (it means the default, or no limit); it may only lower it", bv)
		}
		if !unlimited(b) && (unlimited(a) || a > b) {
			return fmt.Sprintf("%s raises %s; it may only lower it", av, bv)
		}
	case wsRateLimit:
		return rateLimitsWiden(c.Model, ac.Model)
	case wsOnlyFalse:
		if av == "true" && bv != "true" {
			return "it may only be turned off here"
		}
	case wsOnlyTrue:
		if av == "false" && bv == "true" {
			return "it may only be turned on here"
		}
	case wsTighten:
		if bv != "" && slices.Index(r.order, av) < slices.Index(r.order, bv) {
			return fmt.Sprintf("%s is wider than %s; it may only tighten (%s, from the widest)", av, bv, strings.Join(r.order, ", "))
		}
	case wsSubset:
		if !subset(items(after), items(before)) {
			return "it may only list what the user's own config lists"
		}
	case wsSuperset:
		if !subset(items(before), items(after)) {
			return "it may only add to the list, not drop from it"
		}
	case wsModel:
		if !c.ModelAllowed(av) {
			return fmt.Sprintf("model %q is not one the user configured (%s)", av, strings.Join(c.ConfiguredModels(), ", "))
		}
	case wsRounds:
		for _, item := range after.Content {
			if m := lookup(item, []string{"model"}); m != nil && !c.ModelAllowed(m.Value) {
				return fmt.Sprintf("model %q is not one the user configured", m.Value)
			}
		}
	case wsKindTools:
		if had, ok := kindTools(path[1], c, builtin); !ok || !subset(items(after), had) {
			return "a kind's tools may only narrow: the kind has " + strings.Join(had, ", ")
		}
	}
	return ""
}

// kindTools are the tools of kind name before the workspace file: the
// user's config's, the built-in kind's, or for a new kind a worker's.
func kindTools(name string, c Config, builtin map[string]Kind) ([]string, bool) {
	if k, ok := c.Kinds[name]; ok && k.Tools != nil {
		return k.Tools, true
	}
	if k, ok := builtin[name]; ok {
		return k.Tools, true
	}
	if k, ok := builtin["worker"]; ok {
		return k.Tools, true
	}
	return nil, false
}

// ConfiguredModels are the models c names (its default and cheap model,
// those it prices or sizes, routes to or gives a kind), sorted: a
// workspace's own files may choose among them.
func (c Config) ConfiguredModels() []string {
	out := []string{c.Model.Default, c.Model.Cheap}
	for m := range c.Model.Pricing {
		out = append(out, m)
	}
	for m := range c.Model.ContextWindows {
		out = append(out, m)
	}
	for _, m := range c.Model.Routing.PerKind {
		out = append(out, m)
	}
	for _, r := range c.Model.Routing.Rounds {
		out = append(out, r.Model)
	}
	for _, k := range c.Kinds {
		out = append(out, k.Model)
	}
	slices.Sort(out)
	out = slices.Compact(out)
	return slices.DeleteFunc(out, func(m string) bool { return m == "" })
}

// ModelAllowed reports whether a workspace's own file may choose model: a
// role alias (cheap, default, parent), none, or one c names.
func (c Config) ModelAllowed(model string) bool {
	switch model {
	case "", "cheap", "default", "parent":
		return true
	}
	return slices.Contains(c.ConfiguredModels(), model)
}

// nodeOf is c as a YAML node tree.
func nodeOf(c Config) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(c); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return &n, nil
}

// lookup is the node at path beneath n (a mapping), nil when absent.
func lookup(n *yaml.Node, path []string) *yaml.Node {
	for _, p := range path {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == p {
				next = n.Content[i+1]
			}
		}
		n = next
	}
	return n
}

func scalar(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode {
		return ""
	}
	return n.Value
}
