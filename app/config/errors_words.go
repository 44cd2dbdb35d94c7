package config

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	typeErrRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("^line (\\d+): cannot unmarshal !!(\\w+) `(.*)` into (.+)$")
	})
	kindErrRE    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^line (\d+): cannot unmarshal !!(\w+) into (.+)$`) })
	unknownKeyRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^line (\d+): field (\S+) not found in type config\.(\w+)$`)
	})
)

// explainYAML rewrites yaml.v3's decoding errors in words: the setting's
// dotted name, the file and line, and what the setting accepts (never a Go
// type name).
func explainYAML(err error, src []byte, file string) error {
	msg := err.Error()
	lines := strings.Split(strings.TrimPrefix(msg, "yaml: unmarshal errors:\n"), "\n")
	var out []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if m := typeErrRE().FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, fmt.Sprintf("%s line %d: %s: %q is not %s", file, n, keyAt(src, n), m[3], accepted(m[4])))
			continue
		}
		if m := kindErrRE().FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			what := map[string]string{"seq": "a list", "map": "a mapping", "str": "text"}[m[2]]
			if what == "" {
				what = "a " + m[2]
			}
			out = append(out, fmt.Sprintf("%s line %d: %s: %s is not %s", file, n, keyAt(src, n), what, accepted(strings.TrimPrefix(m[3], "config."))))
			continue
		}
		if m := unknownKeyRE().FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			key := keyAt(src, n)
			known := knownKeys(m[3])
			section := key[:max(strings.LastIndexByte(key, '.'), 0)]
			where := "at the top level"
			if section != "" {
				where = "under " + section
			}
			out = append(out, fmt.Sprintf("%s line %d: %s is not a setting; %s the settings are: %s (see configs/default.yaml)",
				file, n, key, where, strings.Join(known, ", ")))
			continue
		}
		out = append(out, file+": "+strings.TrimPrefix(l, "yaml: "))
	}
	return fmt.Errorf("config: %s", strings.Join(out, "\n  "))
}

// accepted says in words what a Go type accepts.
func accepted(goType string) string {
	switch goType {
	case "int", "int64", "int32", "uint64":
		return "a whole number"
	case "float64":
		return "a number"
	case "bool":
		return "true or false"
	case "time.Duration":
		return "a duration such as 30s, 5m or 1h30m"
	case "string":
		return "text"
	}
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list, e.g. [a, b]"
	case strings.HasPrefix(goType, "map["):
		return "a mapping, e.g. {key: value}"
	}
	return "a mapping of settings"
}

// keyAt is the dotted key on line n (1-based) of a YAML document, found
// from the indentation of the lines above it.
func keyAt(src []byte, n int) string {
	lines := strings.Split(string(src), "\n")
	if n < 1 || n > len(lines) {
		return "?"
	}
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	name := func(s string) string {
		s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "- "))
		k, _, _ := strings.Cut(s, ":")
		return strings.Trim(k, `"'`)
	}
	path := []string{name(lines[n-1])}
	cur := indent(lines[n-1])
	for i := n - 2; i >= 0 && cur > 0; i-- {
		l := lines[i]
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if ind := indent(l); ind < cur {
			path = append([]string{name(l)}, path...)
			cur = ind
		}
	}
	return strings.Join(path, ".")
}

// knownKeys lists the YAML keys of the config struct named typ.
func knownKeys(typ string) []string {
	var found reflect.Type
	var walk func(t reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Map || t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] || t == reflect.TypeOf(time.Time{}) {
			return
		}
		seen[t] = true
		if t.Name() == typ {
			found = t
		}
		for i := 0; i < t.NumField(); i++ {
			walk(t.Field(i).Type)
		}
	}
	walk(reflect.TypeOf(Config{}))
	if found == nil {
		return nil
	}
	var keys []string
	for i := 0; i < found.NumField(); i++ {
		if k, _, _ := strings.Cut(found.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
