package setup

import (
	"github.com/troupe-ai/troupe/app/config"
	"github.com/troupe-ai/troupe/bus"
	"github.com/troupe-ai/troupe/internal/redact"
	"github.com/troupe-ai/troupe/llm"
)

// Secrets are the configured values never to show: the model's (the API
// key, credential headers, a password in the base URL) and NATS's (the
// token, the password, credentials in the URLs, the creds file's JWT and
// seed). Runs redact them from tool results, events and checkpoints
// (actors.Options.Secrets); the programs' log writers from their logs.
func Secrets(cfg config.Config) []string {
	m, n := cfg.Model, cfg.NATS
	out := llm.Config{BaseURL: m.BaseURL, APIKey: m.APIKey, Headers: m.Headers}.Secrets()
	return append(out, bus.ConnectOptions{URLs: n.URL, Token: n.Token, User: n.User, Password: n.Password,
		CredsFile: n.Creds}.Secrets()...)
}

// Redactor is Secrets as a redactor (nil when there is none).
func Redactor(cfg config.Config) *redact.Redactor { return redact.New(Secrets(cfg)...) }
