package web

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/troupe-ai/troupe/tools"
)

//go:embed fetch.md
var webFetchDoc string

// WebFetchParams are web_fetch's arguments.
type WebFetchParams struct {
	URL    string `json:"url" jsonschema:"the http or https URL of the page; a URL without a scheme is fetched over https"`
	Prompt string `json:"prompt,omitempty" jsonschema:"what you want from the page, e.g. 'the default timeout and how to change it'; a small model reads the page and only its answer comes back. Omit it to get the whole page as Markdown"`
}

// webFetchTimeout bounds a whole call: the fetch (tools.web.timeout) and
// an extraction by the model.
const webFetchTimeout = 4 * time.Minute

// WebFetch returns the web_fetch tool: an HTTP(S) GET whose HTML comes
// back as Markdown (text as it is), or, with a prompt, a cheap model's
// answer from the page. Non-public addresses are refused unless the
// configuration allows them; pages are cached for Config.Web.CacheTTL.
func WebFetch() tools.Tool {
	return tools.New(tools.Spec{
		Guidance: []tools.GuidanceLine{{Section: tools.SectionWhichTool, Order: 60, Text: func(has func(...string) bool) string {
			if has(NameWebSearch) {
				return "" // web_search's line covers both
			}
			return "Read a web page you know the address of with web_fetch; give it a prompt saying what you need, so only the answer comes back."
		}}},
		Name: NameWebFetch, Description: webFetchDoc, ReadOnly: true,
		Cacheable: false, Parallel: tools.ParallelSafe, Tier: tools.TierOnRelevance, Truncation: tools.Head(32 * 1024),
		Timeout: webFetchTimeout}, runWebFetch)
}

func runWebFetch(ctx context.Context, s *tools.Session, p WebFetchParams) (tools.Result, error) {
	cfg := *configOf(s)
	if cfg.NoFetch {
		return tools.Errorf("web_fetch is turned off in this run's configuration (tools.web.fetch)"), nil
	}
	u, err := normalizeURL(p.URL)
	if err != nil {
		return tools.Errorf("web_fetch: %v", err), nil
	}
	page, cached, err := loadPage(ctx, s, u)
	switch {
	case err != nil && ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case err != nil:
		var bin errBinary
		if errors.As(err, &bin) {
			return tools.Errorf("web_fetch %s: %v", u.Redacted(), err), nil
		}
		return tools.Errorf("web_fetch %s: %s", u.Redacted(), describeFetchError(err, u, cfg)), nil
	case page.StatusError:
		return pageResult(page, cached, ""), nil
	}
	prompt := strings.TrimSpace(p.Prompt)
	if prompt == "" {
		return pageResult(page, cached, ""), nil
	}
	if extractorOf(s) == nil {
		return pageResult(page, cached, "No model is available here to answer the prompt, so the whole page follows."), nil
	}
	return extract(ctx, s, page, prompt)
}

// loadPage returns the page at u from the web cache or the network.
func loadPage(ctx context.Context, s *tools.Session, u *url.URL) (*webPage, bool, error) {
	key := "page\x00" + u.String()
	if v, ok := cacheOf(s).get(key); ok {
		return v.(*webPage), true, nil
	}
	cfg := *configOf(s)
	f, err := fetchURL(ctx, cfg, u)
	if err != nil {
		return nil, false, err
	}
	page, err := readPage(ctx, f, cfg.maxBytes())
	if err != nil {
		return nil, false, err
	}
	// Error pages are not kept. Pages from private addresses are, until
	// the next change an agent makes (WebCache.dropPrivate): a local
	// server may be the program the agents are changing.
	if !page.StatusError {
		cacheOf(s).put(key, page, len(page.Text)+256, page.Private)
	}
	return page, false, nil
}

// extract answers prompt from page with the session's extractor; the
// answer is cached with the page.
func extract(ctx context.Context, s *tools.Session, page *webPage, prompt string) (tools.Result, error) {
	key := "extract\x00" + page.URL + "\x00" + prompt
	if v, ok := cacheOf(s).get(key); ok {
		ex := v.(Extraction)
		r := extractResult(page, prompt, ex)
		r.Cached = true
		return r, nil
	}
	ex, err := extractorOf(s).Extract(ctx, ExtractRequest{URL: page.URL, Title: page.Title, Prompt: prompt, Content: page.Text})
	switch {
	case err != nil && ctx.Err() != nil:
		return tools.Result{}, ctx.Err()
	case err != nil:
		return tools.Errorf("web_fetch %s: the page was fetched, but the model could not answer the prompt from it: %v. Call web_fetch without a prompt to read the page itself", page.URL, err), nil
	case strings.TrimSpace(ex.Text) == "":
		return tools.Errorf("web_fetch %s: the model gave an empty answer to the prompt; call web_fetch without a prompt to read the page itself", page.URL), nil
	}
	cacheOf(s).put(key, ex, len(ex.Text)+len(key), page.Private)
	return extractResult(page, prompt, ex).WithMeta(MetaExtraction, ex), nil
}

func extractResult(page *webPage, prompt string, ex Extraction) tools.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", page.URL)
	fmt.Fprintf(&b, "Answer to %q, from the page:\n\n", prompt)
	b.WriteString(strings.TrimSpace(ex.Text))
	b.WriteByte('\n')
	if ex.InputCut {
		b.WriteString("\n(The page was longer than the model reads; the answer comes from its first part.)\n")
	}
	if page.Cut {
		fmt.Fprintf(&b, "(The page was cut at %s; the answer comes from that part.)\n", humanBytes(page.MaxBytes))
	}
	return pageMeta(tools.Text(b.String()), page)
}

// pageResult shows the page: a header (URL, redirects, title, notes),
// then its Markdown or text. A 4xx or 5xx answer is an error result that
// still shows what the server said.
func pageResult(page *webPage, cached bool, note string) tools.Result {
	var b strings.Builder
	if page.StatusError {
		fmt.Fprintf(&b, "web_fetch: %s answered HTTP %d %s\n", page.URL, page.Status, statusText(page.Status))
	} else {
		fmt.Fprintf(&b, "URL: %s\n", page.URL)
	}
	if n := len(page.Redirects); n > 0 {
		fmt.Fprintf(&b, "Redirected from: %s\n", page.Redirects[0])
	}
	if page.Title != "" {
		fmt.Fprintf(&b, "Title: %s\n", page.Title)
	}
	if !page.Converted {
		fmt.Fprintf(&b, "Content-Type: %s\n", page.MediaType)
	}
	if page.Cut {
		size := "over the"
		if page.Declared > page.MaxBytes {
			size = humanBytes(page.Declared) + ", over the"
		}
		fmt.Fprintf(&b, "Note: the page is %s %s cap; only its first %s were read.\n",
			size, humanBytes(page.MaxBytes), humanBytes(page.MaxBytes))
	}
	if note != "" {
		fmt.Fprintf(&b, "Note: %s\n", note)
	}
	b.WriteByte('\n')
	text := page.Text
	if page.StatusError {
		text = tools.HeadBytes(text, 2000)
	}
	if strings.TrimSpace(text) == "" {
		text = "(the page has no text content; it may be built by JavaScript, which web_fetch does not run)"
	}
	b.WriteString(text)
	b.WriteByte('\n')
	r := pageMeta(tools.Text(b.String()), page)
	r.IsError, r.Cached = page.StatusError, cached
	return r
}

func pageMeta(r tools.Result, page *webPage) tools.Result {
	r = r.WithMeta("url", page.URL).WithMeta("status", page.Status).WithMeta("content_type", page.MediaType).
		WithMeta("bytes", page.Bytes)
	if page.Cut {
		r = r.WithMeta("cut", true)
	}
	if len(page.Redirects) > 0 {
		r = r.WithMeta("redirects", page.Redirects)
	}
	return r
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return t
	}
	return "(no standard name)"
}
