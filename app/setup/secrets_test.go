package setup

import (
	"slices"
	"testing"

	"github.com/rs/zerolog"
	"github.com/troupe-ai/troupe/app/config"
)

// The run gets every configured secret to redact: the model key and
// credential headers, the NATS token, password and URL credentials.
func TestSecretsReachTheRun(t *testing.T) {
	cfg, err := config.Load(config.Sources{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Model.APIKey = "sk-config-key-123"
	cfg.Model.Headers = map[string]string{"x-api-key": "header-key-456", "HTTP-Referer": "https://example.com"}
	cfg.NATS.Token, cfg.NATS.Password = "nats-token-789", "nats-password-012"
	cfg.NATS.URL = "nats://u:url-password-345@hub:4222"
	o, err := TeamOptions(cfg, t.TempDir(), zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"sk-config-key-123", "header-key-456", "nats-token-789", "nats-password-012", "url-password-345"} {
		if !slices.Contains(o.Secrets, want) {
			t.Errorf("the run's secrets lack %q", want)
		}
	}
	if slices.Contains(o.Secrets, "https://example.com") {
		t.Error("a header that is no credential is taken for a secret")
	}
	if r := Redactor(cfg); r.String("key sk-config-key-123") != "key [redacted]" {
		t.Error("the log redactor misses the key")
	}
}
