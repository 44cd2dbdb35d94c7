package llm

import (
	"net/url"
	"strings"
)

// Secrets are the values of c that must never be shown: the API key, the
// values of headers whose names say they carry credentials (api-key,
// x-api-key, ...), and a password in the base URL. The client scrubs them
// from its errors and logs; a program passes them on to redact everything
// else it writes (actors.Options.Secrets).
func (c Config) Secrets() []string {
	out := []string{c.APIKey}
	for k, v := range c.Headers {
		if credentialHeader(k) {
			out = append(out, v)
		}
	}
	if u, err := url.Parse(c.BaseURL); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			out = append(out, pw)
		}
	}
	return out
}

// credentialHeader reports a header name that carries a credential.
func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"key", "token", "secret", "auth", "password", "cookie"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}
