package guard

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

// blockRule is one compiled configured blocklist entry.
type blockRule struct {
	name string // the outer named group, or the expression itself
	re   *regexp.Regexp
}

// CompileBlocklist compiles the configured shell blocklist (regular
// expressions); a rule that does not compile is an error naming it, so a
// bad configuration never silently allows all.
func CompileBlocklist(rules []string) error {
	_, err := compileBlocklist(rules)
	return err
}

func compileBlocklist(rules []string) ([]blockRule, error) {
	out := make([]blockRule, 0, len(rules))
	for _, r := range rules {
		re, err := regexp.Compile(r)
		if err != nil {
			return nil, fmt.Errorf("shell blocklist rule %q is not a valid regular expression: %v", r, err)
		}
		name := r
		if names := re.SubexpNames(); len(names) > 1 && names[1] != "" && strings.HasPrefix(r, "(?P<"+names[1]+">") {
			name = names[1]
		}
		out = append(out, blockRule{name: name, re: re})
	}
	return out, nil
}

// blockedBy returns the name of the first rule text matches, or "".
func blockedBy(rules []blockRule, text string) string {
	for _, r := range rules {
		if r.re.MatchString(text) {
			return r.name
		}
	}
	return ""
}

// New builds the guard: the built-in rules plus blocklist, the
// configured regular expressions, which are matched against the whole
// command, every nested script (sh -c strings, eval, ...) and every
// simple command as the guard normalised it (quotes and backslashes
// removed, variables the command set expanded, wrappers such as sudo or
// env kept and also looked through).
func New(blocklist []string) (*Guard, error) {
	user, err := compileBlocklist(blocklist)
	if err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	return &Guard{user: user, home: home}, nil
}
