package config

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Setting is one effective configuration value and where it came from.
type Setting struct {
	Key    string `json:"key"`    // dotted, e.g. model.default
	Value  string `json:"value"`  // as YAML would write it; secrets are [redacted]
	Origin string `json:"origin"` // "default", "<file> line <n>", "env <VAR>" or "flag --<name>"
	// Workspace says what a workspace's own config file may do with the
	// setting (WorkspaceMay): no, yes, lower only, tighten only, narrow
	// only, a configured model.
	Workspace string `json:"workspace"`
}

// origin is where a setting was last set: "<file> line <n>", "env <VAR>"
// or "flag --<name>". whole is true when the layer set the value in one
// piece (a scalar, a list, an empty mapping), so keys under it came from
// there too.
type origin struct {
	at    string
	whole bool
}

// secretKeys are never printed.
var secretKeys = []string{"model.api_key", "nats.token", "nats.password", "tools.web.search.api_key"}

// SetByFlag records that flag (e.g. "--model") set the setting key, so
// that Settings and Validate's errors name it. The caller sets the value.
func (c *Config) SetByFlag(key, flag string) {
	c.setOrigin(key, origin{at: "flag " + flag, whole: true})
}

func (c *Config) setOrigin(key string, o origin) {
	c.ownOrigins()
	c.origins[key] = o
}

// ownOrigins gives c a map of origins of its own to write: a copy of c
// may share the map.
func (c *Config) ownOrigins() {
	c.origins = maps.Clone(c.origins)
	if c.origins == nil {
		c.origins = map[string]origin{}
	}
}

// markFile records the keys a configuration file sets, with their lines.
func (c *Config) markFile(data []byte, file string) {
	var n yaml.Node
	if yaml.Unmarshal(data, &n) != nil {
		return
	}
	c.ownOrigins()
	positions(&n, "", func(key string, line int, whole bool) {
		if whole { // what an earlier layer set under key is gone
			for k := range c.origins {
				if strings.HasPrefix(k, key+".") || strings.HasPrefix(k, key+"[") {
					delete(c.origins, k)
				}
			}
		}
		c.origins[key] = origin{at: file + " line " + strconv.Itoa(line), whole: whole}
	})
}

// positions calls fn with every key a document sets: the keys of
// mappings (at the key's line) and the items of lists (key[i]).
func positions(n *yaml.Node, prefix string, fn func(key string, line int, whole bool)) {
	whole := func(v *yaml.Node) bool { return v.Kind != yaml.MappingNode || len(v.Content) == 0 }
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			positions(n.Content[0], prefix, fn)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if prefix != "" {
				k = prefix + "." + k
			}
			fn(k, n.Content[i].Line, whole(n.Content[i+1]))
			positions(n.Content[i+1], k, fn)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			k := fmt.Sprintf("%s[%d]", prefix, i)
			fn(k, item.Line, whole(item))
			positions(item, k, fn)
		}
	}
}

// originOf is where key was set, "" for the default. A key a layer did
// not name itself comes from the nearest enclosing key that layer set in
// one piece (a list, say).
func (c Config) originOf(key string) string {
	if o, ok := c.origins[key]; ok {
		return o.at
	}
	for k := parentKey(key); k != ""; k = parentKey(k) {
		if o, ok := c.origins[k]; ok && o.whole {
			return o.at
		}
	}
	return ""
}

// IsSet reports whether key (dotted, e.g. nats.events_max_age) was set by
// a file, the environment or a flag rather than left at its default.
func (c Config) IsSet(key string) bool { return c.originOf(key) != "" }

// Settings lists every setting of c with its value and where it came
// from, sorted by key; secrets show as [redacted].
func (c Config) Settings() ([]Setting, error) {
	out, err := yaml.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(out, &n); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var settings []Setting
	for _, l := range leaves(&n, "") {
		if (slices.Contains(secretKeys, l.Key) || secretValue(l.Key, l.Value)) && l.Value != `""` && l.Value != "" {
			l.Value = "[redacted]"
		}
		l.Origin = c.originOf(l.Key)
		if l.Origin == "" {
			l.Origin = "default"
		}
		l.Workspace = WorkspaceMay(l.Key)
		settings = append(settings, l)
	}
	slices.SortFunc(settings, func(a, b Setting) int { return strings.Compare(a.Key, b.Key) })
	return settings, nil
}

// parentKey is the key enclosing k: model for model.default,
// tools.shell_blocklist for tools.shell_blocklist[1].
func parentKey(k string) string {
	if strings.HasSuffix(k, "]") {
		if i := strings.LastIndexByte(k, '['); i > 0 {
			return k[:i]
		}
	}
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

func leaves(n *yaml.Node, prefix string) []Setting {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) > 0 {
			return leaves(n.Content[0], prefix)
		}
	case yaml.MappingNode:
		var out []Setting
		if len(n.Content) == 0 && prefix != "" {
			return []Setting{{Key: prefix, Value: "{}"}}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if prefix != "" {
				k = prefix + "." + k
			}
			out = append(out, leaves(n.Content[i+1], k)...)
		}
		return out
	default:
		b, _ := yaml.Marshal(n)
		v := strings.TrimSpace(string(b))
		if n.Kind == yaml.SequenceNode {
			v = flow(n)
		}
		return []Setting{{Key: prefix, Value: v}}
	}
	return nil
}

// flow writes a list on one line.
func flow(n *yaml.Node) string {
	var parts []string
	for _, c := range n.Content {
		b, _ := yaml.Marshal(c)
		parts = append(parts, strings.TrimSpace(string(b)))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
