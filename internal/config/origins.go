package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/troupe-ai/troupe/configs"
)

// Setting is one effective configuration value and where it came from.
type Setting struct {
	Key    string `json:"key"`    // dotted, e.g. model.default
	Value  string `json:"value"`  // as YAML would write it; secrets are [redacted]
	Origin string `json:"origin"` // "default", a file path, or an environment variable
}

// envKeys are the settings the environment can set, by variable.
var envKeys = [][2]string{
	{"OPENAI_API_KEY", "model.api_key"}, {"OPENAI_BASE_URL", "model.base_url"}, {"TROUPE_MODEL", "model.default"},
	{"TROUPE_CHEAP_MODEL", "model.cheap"}, {"TROUPE_NATS_URL", "nats.url"}, {"TROUPE_NATS_TOKEN", "nats.token"},
	{"TROUPE_NATS_PASSWORD", "nats.password"},
}

// secretKeys are never printed.
var secretKeys = []string{"model.api_key", "nats.token", "nats.password", "tools.web.search.api_key"}

// Effective loads the configuration as Load does and lists every setting
// with its value and the layer that set it, sorted by key; flags is what
// the caller's flags set (key → flag name), applied last by the caller.
func Effective(src Sources, flags map[string]string) (Config, []Setting, error) {
	getenv := src.Getenv
	src.Getenv = nil
	c, err := Load(src)
	if err != nil {
		return Config{}, nil, err
	}
	var fromEnv map[string]string
	if getenv != nil {
		fromEnv = c.applyEnv(getenv)
	}
	origin := map[string]string{}
	mark := func(data []byte, name string) {
		var n yaml.Node
		if yaml.Unmarshal(data, &n) != nil {
			return
		}
		for _, k := range leafKeys(&n, "") {
			origin[k] = name
		}
	}
	mark(configs.Default, "default")
	var files []string
	if src.Home != "" {
		files = append(files, filepath.Join(src.Home, ".config", "troupe", "config.yaml"))
	}
	if src.Workspace != "" {
		files = append(files, filepath.Join(src.Workspace, ".troupe", "config.yaml"))
	}
	if src.File != "" {
		files = append(files, src.File)
	}
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			mark(data, f)
		}
	}
	if getenv != nil {
		for _, e := range envKeys {
			if getenv(e[0]) != "" {
				origin[e[1]] = "env " + e[0]
			}
		}
	}
	for k, v := range fromEnv {
		origin[k] = v
	}
	for k, f := range flags {
		origin[k] = "flag " + f
	}
	out, err := yaml.Marshal(c)
	if err != nil {
		return Config{}, nil, fmt.Errorf("config: %w", err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(out, &n); err != nil {
		return Config{}, nil, fmt.Errorf("config: %w", err)
	}
	var settings []Setting
	for _, l := range leaves(&n, "") {
		o := "default"
		for k := l.Key; k != ""; k = parentKey(k) {
			if v, ok := origin[k]; ok {
				o = v
				break
			}
		}
		if (slices.Contains(secretKeys, l.Key) || secretValue(l.Key, l.Value)) && l.Value != `""` && l.Value != "" {
			l.Value = "[redacted]"
		}
		l.Origin = o
		settings = append(settings, l)
	}
	slices.SortFunc(settings, func(a, b Setting) int { return strings.Compare(a.Key, b.Key) })
	return c, settings, nil
}

func parentKey(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

// leafKeys lists the dotted keys a document sets (mappings walked; a
// scalar or a list is a leaf).
func leafKeys(n *yaml.Node, prefix string) []string {
	var out []string
	for _, l := range leaves(n, prefix) {
		out = append(out, l.Key)
	}
	return out
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
