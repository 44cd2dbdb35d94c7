package shell

import (
	"strings"
	"testing"
)

// A command sees the allow-listed variables and the configured extras,
// never a name that looks like it holds a secret.
func TestShellChildEnvironment(t *testing.T) {
	secrets := map[string]string{"GITHUB_PAT": "ghp_x", "NPM_AUTH": "npm_x", "AWS_SECRET_ACCESS_KEY": "aws_x",
		"OPENAI_KEY": "sk_x", "OPENAI_API_KEY": "sk_y", "AWS_REGION": "eu", "MY_TOKEN": "t", "SSH_AUTH_SOCK": "/s",
		"GOOGLE_APPLICATION_CREDENTIALS": "/c", "AZURE_CLIENT_SECRET": "az", "DB_PASSWORD": "pw", "SESSION_COOKIE": "c"}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	t.Setenv("MY_SETTING", "kept")
	t.Setenv("RANDOM_THING", "dropped")
	t.Setenv("LC_ALL", "C.UTF-8")
	s := newTestSession(t)
	Configure(s, Config{Env: []string{"MY_SETTING", "MY_TOKEN"}}) // an extra cannot unlock a secret name
	r := runTool(t, Shell(), s, `{"command":"env"}`)
	if r.IsError {
		t.Fatalf("env: %s", r.Text)
	}
	for k := range secrets {
		if strings.Contains(r.Text, k+"=") {
			t.Errorf("a child saw %s", k)
		}
	}
	for _, want := range []string{"PATH=", "HOME=", "MY_SETTING=kept", "LC_ALL=C.UTF-8"} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("a child lacks %s:\n%s", want, r.Text)
		}
	}
	if strings.Contains(r.Text, "RANDOM_THING") {
		t.Error("a variable outside the allow-list reached the child")
	}
	for _, name := range []string{"PATH", "GOPATH", "COMPASS_DIR", "PATHEXT", "TERM"} {
		if secretEnvName(name) {
			t.Errorf("%s taken for a secret", name)
		}
	}
}

// The deny rule catches secret-looking names however their words are
// joined (NPM_AUTHTOKEN, GITHUBTOKEN, API_KEYS, PASSPHRASE) and the cloud
// providers' credential variables, while names that only contain a secret
// word inside a harmless one (PATH, GOPATH, KEYBOARD_LAYOUT, GOPRIVATE,
// GIT_AUTHOR_NAME) pass.
func TestSecretEnvNames(t *testing.T) {
	t.Parallel()
	secret := []string{
		// KEY
		"OPENAI_KEY", "OPENAI_API_KEY", "API_KEYS", "APIKEY", "ANTHROPIC_APIKEY", "AWS_ACCESS_KEY_ID", "PRIVATE_KEY",
		"SSH_KEY_PATH", "GPG_KEYID", "SIGNING_KEYS", "ACCESSKEY", "TLS_KEYFILE", "KEYSTORE_PASSWORD", "MY_KEY_VALUE",
		"mykeyvalue", "License-Key", "npm.key",
		// TOKEN
		"NPM_AUTHTOKEN", "GITHUBTOKEN", "GITHUB_TOKEN", "ACCESS_TOKENS", "GH_TOKEN", "HF_TOKEN", "TOKEN", "SLACK_BOT_TOKEN",
		"CI_JOB_TOKEN", "VAULT_TOKEN", "tokenfile",
		// SECRET
		"X_SECRETS", "CLIENT_SECRET", "SECRET", "JWTSECRET", "MSI_SECRET", "ARM_CLIENT_SECRET",
		// PASS, PASSWORD, PASSPHRASE
		"DB_PASSWORD", "PGPASSWORD", "PASSPHRASE", "GPG_PASSPHRASE", "MYSQL_PWD", "DB_PW", "SMTP_PASS", "PASSWD",
		"REDIS_PASSWORD", "NPM_PASS", "PGPASSFILE", "KEYPASS",
		// PAT
		"GITHUB_PAT", "GITHUB_PATS", "ADO_PAT", "AZDO_PAT", "GITLABPAT", "PAT",
		// AUTH (not AUTHOR, but AUTHORIZATION)
		"NPM_AUTH", "GOAUTH", "OAUTH_CLIENT", "SSH_AUTH_SOCK", "AUTHORIZATION", "HTTP_AUTHORISATION", "BASIC_AUTH_USER",
		"NPM_CONFIG__AUTH", "AUTH",
		// CREDENTIAL, CRED
		"GOOGLE_APPLICATION_CREDENTIALS", "CREDENTIALS_FILE", "DOCKER_CREDS", "NATS_CREDS", "CREDENTIAL",
		// COOKIE, SESSION, PRIVATE, BEARER
		"SESSION_COOKIE", "COOKIEJAR", "DBUS_SESSION_BUS_ADDRESS", "SESSION_ID", "NPM_PRIVATE_REGISTRY", "BEARER",
		// cloud providers
		"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AZURE_CLIENT_ID", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE", "ARM_ACCESS_KEY",
		"GOOGLE_CLOUD_PROJECT", "GCP_SERVICE_ACCOUNT", "GCLOUD_PROJECT", "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE",
		"IDENTITY_ENDPOINT", "IDENTITY_HEADER", "MSI_ENDPOINT", "IMDS_ENDPOINT",
	}
	harmless := []string{
		"PATH", "GOPATH", "PYTHONPATH", "PKG_CONFIG_PATH", "NODE_PATH", "MANPATH", "CDPATH", "PATHEXT", "INFOPATH",
		"LD_LIBRARY_PATH", "GOPRIVATE", "GOPROXY", "GONOSUMDB", "GOFLAGS", "GOROOT", "GOCACHE", "GOTOOLCHAIN",
		"GOEXPERIMENT", "CGO_ENABLED", "KEYBOARD_LAYOUT", "XKB_KEYMAP", "KEYCODES", "HOME", "PWD", "OLDPWD", "USER",
		"LOGNAME", "SHELL", "LANG", "LC_ALL", "TERM", "COLORTERM", "TZ", "TMPDIR", "COLUMNS", "LINES", "EDITOR",
		"PAGER", "CI", "CC", "CXX", "CFLAGS", "LDFLAGS", "CARGO_HOME", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "NVM_DIR",
		"VIRTUAL_ENV", "PYENV_ROOT", "JAVA_HOME", "MAVEN_HOME", "GRADLE_HOME", "SSL_CERT_FILE", "SSL_CERT_DIR",
		"XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "XDG_SESSION_TYPE", "XDG_SESSION_ID", "DISPLAY", "GIT_AUTHOR_NAME",
		"GIT_AUTHOR_EMAIL", "AUTHORS_FILE", "CERT_AUTHORITY", "COMPASS_DIR", "NO_PROXY_BYPASS", "PASSIVE_MODE",
		"TOKENIZERS_PARALLELISM", "PATTERN", "PATCH_LEVEL", "GO_COMPAT", "CREDIT_LIMIT", "MY_SETTING", "NO_COLOR",
		"HOSTNAME", "SHLVL", "HTTP_PROXY", "DEBIAN_FRONTEND",
	}
	for _, name := range secret {
		if !secretEnvName(name) {
			t.Errorf("%s passes for harmless", name)
		}
	}
	for _, name := range harmless {
		if secretEnvName(name) {
			t.Errorf("%s taken for a secret", name)
		}
	}
}

// An allow-list pattern or a configured extra never admits a secret name:
// GO* lets GOPATH and GOPRIVATE through but not GOAUTH, and an extra
// NPM_* lets NPM_CONFIG_REGISTRY through but not NPM_AUTHTOKEN.
func TestChildEnvPatternsKeepSecretsOut(t *testing.T) {
	t.Parallel()
	env := []string{"GOPATH=/go", "GOPRIVATE=example.com", "GOAUTH=netrc", "NPM_CONFIG_REGISTRY=https://r",
		"NPM_AUTHTOKEN=x", "NPM_TOKENS=x", "NPM_PASSPHRASE=x", "NPM_API_KEYS=x", "XDG_SESSION_TYPE=tty",
		"KEYBOARD_LAYOUT=us", "OTHER=x"}
	got := childEnv(env, []string{"NPM_*", "KEYBOARD_LAYOUT"})
	want := []string{"GOPATH=/go", "GOPRIVATE=example.com", "NPM_CONFIG_REGISTRY=https://r", "XDG_SESSION_TYPE=tty",
		"KEYBOARD_LAYOUT=us"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("child environment %q, want %q", got, want)
	}
}
