package tools

import "strings"

// childEnvAllow are the variables a child process gets from ours: what
// shells, toolchains and terminals need, nothing that carries secrets.
// Names ending in "*" are prefixes.
var childEnvAllow = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "PWD", "LANG", "LANGUAGE", "LC_*", "TERM",
	"COLORTERM", "NO_COLOR", "TZ", "TMPDIR", "COLUMNS", "LINES", "EDITOR", "PAGER", "CI",
	"GO*", "CGO_*", "CC", "CXX", "CFLAGS", "LDFLAGS", "PKG_CONFIG_PATH", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN",
	"NODE_PATH", "NVM_DIR", "PYTHONPATH", "VIRTUAL_ENV", "PYENV_ROOT", "JAVA_HOME", "MAVEN_HOME", "GRADLE_HOME",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "XDG_*", "DISPLAY"}

// secretEnvTokens, as a "_"-separated part of a name, mark it secret; the
// deny rule wins over the allow-list and the configured extras.
var secretEnvTokens = []string{"KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASS", "PAT", "AUTH",
	"CREDENTIAL", "CREDENTIALS", "PRIVATE", "SESSION", "COOKIE"}

// secretEnvPrefixes are cloud credentials' variables.
var secretEnvPrefixes = []string{"AWS_", "AZURE_", "GCP_", "GOOGLE_", "CLOUDSDK_", "ARM_"}

// secretEnvName reports whether a variable's name looks like it holds a
// secret.
func secretEnvName(name string) bool {
	upper := strings.ToUpper(name)
	for _, p := range secretEnvPrefixes {
		if strings.HasPrefix(upper, p) {
			return true
		}
	}
	for _, part := range strings.FieldsFunc(upper, func(r rune) bool { return r == '_' || r == '-' || r == '.' }) {
		for _, tok := range secretEnvTokens {
			if part == tok || (len(tok) > 5 && strings.HasSuffix(part, tok)) {
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
