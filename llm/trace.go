package llm

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"

	"github.com/troupe-ai/troupe/telemetry"
)

// providers maps API hosts to their gen_ai.provider.name; any other
// OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio, the
// scripted one) speaks OpenAI's API and is named for it.
var providers = map[string]string{
	"api.openai.com":                    "openai",
	"openrouter.ai":                     "openrouter",
	"api.groq.com":                      "groq",
	"api.deepseek.com":                  "deepseek",
	"api.mistral.ai":                    "mistral_ai",
	"api.x.ai":                          "x_ai",
	"api.perplexity.ai":                 "perplexity",
	"generativelanguage.googleapis.com": "gcp.gemini",
}

// chatSpan is the provider and server of a client's chat spans.
func chatSpan(base string) telemetry.Chat {
	c := telemetry.Chat{Provider: "openai"}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return c
	}
	host := strings.ToLower(u.Hostname())
	c.Server = host
	if p, ok := providers[host]; ok {
		c.Provider = p
	} else if strings.HasSuffix(host, ".openai.azure.com") {
		c.Provider = "azure.ai.openai"
	}
	switch port, _ := strconv.Atoi(u.Port()); {
	case port > 0:
		c.Port = port
	case u.Scheme == "https":
		c.Port = 443
	case u.Scheme == "http":
		c.Port = 80
	}
	return c
}

// errorType is a failed call's error.type: the HTTP status of an API
// error, "cancelled" when ctx ended, else "error".
func errorType(ctx context.Context, err error) string {
	var api *APIError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &api) && api.Status > 0:
		return strconv.Itoa(api.Status)
	case ctx.Err() != nil:
		return "cancelled"
	}
	return "error"
}

// Provider is gen_ai.provider.name of c's model calls, named from its
// base URL ("openai" for any other OpenAI-compatible endpoint).
func (c *OpenAIClient) Provider() string { return c.span.Provider }

// ProviderOf is c's Provider, or "" for a Client that does not say.
func ProviderOf(c Client) string {
	if p, ok := c.(interface{ Provider() string }); ok {
		return p.Provider()
	}
	return ""
}
