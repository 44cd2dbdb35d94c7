package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"net/url"
	"strings"

	"github.com/troupe-ai/troupe/messages"
)

// KeyFor is the quota key of calls to model at baseURL with apiKey: the
// endpoint's host (with its port), a fingerprint of the key and the
// model. The fingerprint is the first 16 hex digits of a SHA-256 of the
// key under a fixed label: it tells two keys apart and cannot be turned
// back into the key. Without a key it is "none".
func KeyFor(baseURL, apiKey, model string) messages.RateKey {
	host := baseURL
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		host = strings.ToLower(u.Host)
	}
	return messages.RateKey{Host: host, Account: Fingerprint(apiKey), Model: model}
}

// Fingerprint is the fingerprint of an API key ("none" for no key).
func Fingerprint(apiKey string) string {
	if apiKey == "" {
		return "none"
	}
	sum := sha256.Sum256([]byte("troupe rate-limit key\x00" + apiKey))
	return hex.EncodeToString(sum[:8])
}
