package tools

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
	s.Config.ShellEnv = []string{"MY_SETTING", "MY_TOKEN"} // an extra cannot unlock a secret name
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
