package shell

import (
	"slices"
	"strings"
)

// childEnvAllow are the variables a child process gets from ours: what
// shells, toolchains and terminals need, nothing that carries secrets.
// Names ending in "*" are prefixes.
var childEnvAllow = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "LANG", "LANGUAGE", "LC_*", "TERM",
	"COLORTERM", "NO_COLOR", "TZ", "TMPDIR", "COLUMNS", "LINES", "EDITOR", "PAGER", "CI",
	"GO*", "CGO_*", "CC", "CXX", "CFLAGS", "LDFLAGS", "PKG_CONFIG_PATH", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"NODE_PATH", "NVM_DIR", "PYTHONPATH", "VIRTUAL_ENV", "PYENV_ROOT", "JAVA_HOME", "MAVEN_HOME", "GRADLE_HOME",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_*", "DISPLAY"}

// secretEnvWords mark a variable's name as secret wherever they occur in
// it (upper-cased), inside a word or not: NPM_AUTHTOKEN, GITHUBTOKEN,
// API_KEYS and PASSPHRASE all hold one. An occurrence is excused only
// when it lies inside one of the word's harmless words, so PATH and
// GOPATH are not a PAT, KEYBOARD is not a KEY, GIT_AUTHOR_NAME is not an
// AUTH (but AUTHORIZATION is: its own secret word).
var secretEnvWords = map[string][]string{
	"KEY":        {"KEYBOARD", "KEYMAP", "KEYCODE", "KEYWORD", "KEYBIND"},
	"TOKEN":      {"TOKENIZER"},
	"SECRET":     nil,
	"PASS":       {"COMPASS", "BYPASS", "PASSIVE", "PASSTHROUGH", "PASSTHRU"},
	"PAT":        {"PATH", "PATTERN", "PATCH", "COMPAT", "DISPATCH", "SPATIAL"},
	"AUTH":       {"AUTHOR"},
	"AUTHORIZ":   nil,
	"AUTHORIS":   nil,
	"CREDENTIAL": nil,
	"CRED":       {"CREDIT"},
	"COOKIE":     nil,
	"SESSION":    {"XDG_SESSION"},
	"PRIVATE":    {"GOPRIVATE"},
	"BEARER":     nil,
}

// secretEnvParts are whole "_"-separated parts that mark a name secret
// (DB_PWD), beside the words above; PWD and OLDPWD themselves are the
// working directory.
var secretEnvParts = []string{"PWD", "PW"}

// secretEnvPrefixes are the cloud providers' variables (AWS, Azure and
// its resource manager, Google Cloud), secret or not.
var secretEnvPrefixes = []string{"AWS_", "AZURE_", "ARM_", "GCP_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_"}

// secretEnvNames are credential variables under no telling prefix or
// word: Azure managed identity's endpoint and header.
var secretEnvNames = []string{"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "IMDS_ENDPOINT"}

// secretEnvName reports whether a variable's name looks like it holds a
// secret: it starts with a cloud provider's prefix, is one of the cloud
// credential variables, has a secret word outside that word's harmless
// words, or has a part such as PWD.
func secretEnvName(name string) bool {
	upper := strings.ToUpper(name)
	for _, p := range secretEnvPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	if slices.Contains(secretEnvNames, upper) {
		return true
	}
	for word, harmless := range secretEnvWords {
		if holdsWord(upper, word, harmless) {
			return true
		}
	}
	if upper == "PWD" || upper == "OLDPWD" {
		return false
	}
	parts := strings.FieldsFunc(upper, func(r rune) bool { return r == '_' || r == '-' || r == '.' })
	return slices.ContainsFunc(parts, func(part string) bool { return slices.Contains(secretEnvParts, part) })
}

// holdsWord reports whether s contains word at a place that no harmless
// word covers.
func holdsWord(s, word string, harmless []string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], word)
		if j < 0 {
			return false
		}
		at := i + j
		if !coveredBy(s, at, len(word), harmless) {
			return true
		}
		i = at + 1
	}
}

// coveredBy reports whether s[at:at+n] lies inside an occurrence of one
// of words.
func coveredBy(s string, at, n int, words []string) bool {
	for _, w := range words {
		for start := max(0, at+n-len(w)); start <= at && start+len(w) <= len(s); start++ {
			if s[start:start+len(w)] == w {
				return true
			}
		}
	}
	return false
}

func allowedEnv(name string, extras []string) bool {
	for _, a := range append(childEnvAllow, extras...) {
		if a == name || (strings.HasSuffix(a, "*") && strings.HasPrefix(name, strings.TrimSuffix(a, "*"))) {
			return true
		}
	}
	return false
}

// childEnv builds a child process's environment from env: the allow-list
// plus the configured extras, never a name that looks secret.
func childEnv(env, extras []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if allowedEnv(name, extras) && !secretEnvName(name) {
			out = append(out, kv)
		}
	}
	return out
}
