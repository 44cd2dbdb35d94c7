package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"golang.org/x/net/html/charset"
)

// webPage is a fetched page as web_fetch shows it; it is what the web
// cache keeps.
type webPage struct {
	URL         string
	Redirects   []string
	Status      int
	MediaType   string
	Title       string
	Text        string // Markdown for HTML, the body itself for text
	Bytes       int    // body bytes read
	Cut         bool   // the body was longer than the cap
	Declared    int64  // Content-Length, -1 when unknown
	Converted   bool   // Text is Markdown converted from HTML
	MaxBytes    int64
	StatusError bool // the server answered 4xx or 5xx
	Private     bool // served from a non-public address (a local server may change under us)
}

// contentKind is how web_fetch treats a media type.
type contentKind int

const (
	contentBinary contentKind = iota
	contentHTML
	contentText
)

// classify says how to show a body of media type mt (parameters
// stripped, lower case). An empty type is sniffed from the body.
func classify(mt string, body []byte) (string, contentKind) {
	if mt == "" || mt == "application/octet-stream" && looksText(body) {
		mt, _, _ = mime.ParseMediaType(http.DetectContentType(body))
	}
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml":
		return mt, contentHTML
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/json", mt == "application/xml", mt == "application/javascript",
		mt == "application/ecmascript", mt == "application/x-javascript", mt == "application/yaml",
		mt == "application/x-yaml", mt == "application/toml", mt == "application/x-ndjson",
		mt == "application/graphql", mt == "application/sql", mt == "application/x-sh",
		mt == "application/x-tex", mt == "application/x-subrip":
		if !looksText(body) {
			return mt, contentBinary
		}
		return mt, contentText
	}
	return mt, contentBinary
}

// looksText reports whether the start of body has no NUL byte, which
// text in any encoding web_fetch decodes never has.
func looksText(body []byte) bool {
	return !bytes.Contains(body[:min(len(body), 8192)], []byte{0})
}

// toUTF8 decodes body from the charset its Content-Type header (or, for
// HTML, its <meta>) declares; UTF-8 when neither does.
func toUTF8(body []byte, contentType string) []byte {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return bytes.ToValidUTF8(body, []byte("\uFFFD"))
	}
	return bytes.ToValidUTF8(out, []byte("\uFFFD"))
}

// errBinary is a body web_fetch does not show.
type errBinary struct {
	mediaType string
	size      string
}

func (e errBinary) Error() string {
	return fmt.Sprintf("the content is %s (%s), not text; web_fetch shows web pages and text documents only", e.mediaType, e.size)
}

// readPage turns a response into a page: HTML to Markdown, text as it
// is, anything else an errBinary.
func readPage(ctx context.Context, f *fetched, maxBytes int64) (*webPage, error) {
	mt, _, err := mime.ParseMediaType(f.contentType)
	if err != nil {
		mt = ""
	}
	mt = strings.ToLower(mt)
	mt, kind := classify(mt, f.body)
	p := &webPage{URL: f.url, Redirects: f.redirects, Status: f.status, MediaType: mt, Bytes: len(f.body),
		Cut: f.cut, Declared: f.declared, MaxBytes: maxBytes, StatusError: f.status >= 400, Private: f.private}
	switch kind {
	case contentBinary:
		size := humanBytes(int64(len(f.body)))
		if f.cut {
			size = "over " + humanBytes(maxBytes)
		} else if f.declared > int64(len(f.body)) {
			size = humanBytes(f.declared)
		}
		return nil, errBinary{mediaType: mt, size: size}
	case contentHTML:
		title, md, err := htmlToMarkdown(ctx, toUTF8(f.body, f.contentType), f.url)
		if err != nil {
			return nil, err
		}
		p.Title, p.Text, p.Converted = title, md, true
	default:
		p.Text = strings.TrimSpace(tidyText(string(toUTF8(f.body, f.contentType))))
	}
	return p, nil
}

// tidyText drops control characters but tab and newline (a terminal
// escape in a page must not reach a UI or a log as one).
func tidyText(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			return -1
		}
		return r
	}, s)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
