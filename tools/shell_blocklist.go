package tools

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// DefaultShellBlocklist is the blocklist used when Config.ShellBlocklist is
// nil. Each entry is a regular expression; a command matching one is
// refused before anything runs. The rules are named by their outer named
// group, which the refusal quotes. They catch obvious accidents, not a
// determined adversary: the workspace confinement and the operator's
// sandbox are the real boundary.
var DefaultShellBlocklist = []string{
	// rm -rf /, rm -fr /*, rm -rf --no-preserve-root /, sudo rm -r "/" ...:
	// rm whose arguments (in the same simple command) include / or /*,
	// also inside quotes or $(...) (bash -c "rm -rf /").
	`(?P<rm_root>(?:^|[\s;&|(/"'\x60])rm[ \t]+(?:[^\s;&|]+[ \t]+)*["']?/\*?["']?(?:[\s;&|)]|$))`,
	// mkfs and mkfs.ext4, mkfs.xfs, /sbin/mkfs.vfat ...
	`(?P<mkfs>(?:^|[\s;&|(/"'\x60])mkfs(?:\.[\w.-]+)?(?:[\s;&|)]|$))`,
	// > /dev/sda, >> /dev/sdb1, >| /dev/nvme0n1, dd ... of=/dev/sda; the
	// harmless /dev/null, /dev/stdout, /dev/stderr and /dev/tty stay allowed.
	`(?P<write_to_device>(?:>>?\|?[ \t]*|\bof=)["']?/dev/` + notOneOf(devAllowed, devNameChars) + `)`,
}

// devAllowed are the device names that may be written to.
var devAllowed = []string{"null", "stdout", "stderr", "tty"}

// devNameChars are the characters a device name (after /dev/) is made of:
// anything but whitespace, quotes and shell operators.
const devNameChars = `[^\s;&|)<>'"]`

// notOneOf returns a regular expression matching a word made of chars
// that is not one of words. Go's regexp has no negative lookahead, so the
// complement is spelled out over the trie of words: at each point the word
// may end early, take a character no word continues with, or follow one.
func notOneOf(words []string, chars string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(chars, "[^"), "]")
	end := `(?:` + strings.Replace(chars, "[^", "[", 1) + `|$)` // a non-word char or the end
	var gen func(prefix string) string
	gen = func(prefix string) string {
		next := map[byte]bool{}
		terminal := false
		for _, w := range words {
			if w == prefix {
				terminal = true
			} else if strings.HasPrefix(w, prefix) {
				next[w[len(prefix)]] = true
			}
		}
		var alts []string
		if !terminal {
			alts = append(alts, end)
		}
		var cs []string
		for c := range next {
			cs = append(cs, string(c))
		}
		sort.Strings(cs)
		alts = append(alts, `[^`+inner+strings.Join(cs, "")+`]`)
		for _, c := range cs {
			alts = append(alts, regexp.QuoteMeta(c)+gen(prefix+c))
		}
		return `(?:` + strings.Join(alts, "|") + `)`
	}
	return gen("")
}

// blockRule is one compiled blocklist entry.
type blockRule struct {
	name string // the outer named group, or the expression itself
	re   *regexp.Regexp
}

// compileBlocklist compiles rules; a rule that does not compile is an
// error naming it, so a bad configuration never silently allows all.
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

// blockedBy returns the name of the first rule command matches, or "".
func blockedBy(rules []blockRule, command string) string {
	for _, r := range rules {
		if r.re.MatchString(command) {
			return r.name
		}
	}
	return ""
}
