package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// webUserAgent is sent with every fetch and search.
const webUserAgent = "troupe-web-fetch/1 (an AI agent tool; +text/markdown)"

// fetched is one HTTP response as web_fetch reads it.
type fetched struct {
	url         string   // after redirects
	redirects   []string // the URLs that redirected, in order
	status      int
	statusText  string
	contentType string // the header, as sent
	body        []byte
	cut         bool  // the body went on past the cap
	declared    int64 // Content-Length, -1 when unknown
	private     bool  // a non-public address answered (allowed by the configuration)
}

// maxURLLength bounds the URLs web_fetch accepts.
const maxURLLength = 8 << 10

// normalizeURL checks a URL the model wrote and returns it without its
// fragment. A URL without a scheme is taken as https.
func normalizeURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	switch {
	case raw == "":
		return nil, errors.New("url is empty")
	case len(raw) > maxURLLength:
		return nil, fmt.Errorf("url is %d bytes long; at most %d are accepted", len(raw), maxURLLength)
	}
	if !strings.Contains(raw, "://") {
		// "example.org/x" or "localhost:8080": a host, not a scheme.
		before, _, colon := strings.Cut(raw, ":")
		if !colon || strings.ContainsAny(before, "./") || strings.EqualFold(before, "localhost") {
			raw = "https://" + raw
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url %q does not parse: %v", raw, errors.Unwrap(err))
	}
	u.Scheme = strings.ToLower(u.Scheme)
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("url %q: only http and https URLs can be fetched, not %s URLs", raw, u.Scheme)
	case u.Hostname() == "":
		return nil, fmt.Errorf("url %q has no host", raw)
	case u.User != nil:
		return nil, fmt.Errorf("url %q carries a user name or password; web_fetch does not send credentials", raw)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("url %q: port %s is out of range (1-65535)", raw, p)
		}
	}
	u.Fragment, u.RawFragment = "", ""
	// The URL as it is sent, its bytes escaped, is what the limit is for.
	if n := len(u.String()); n > maxURLLength {
		return nil, fmt.Errorf("url is %d bytes long once escaped; at most %d are accepted", n, maxURLLength)
	}
	return u, nil
}

// errTooManyRedirects marks a fetch stopped by the redirect limit.
var errTooManyRedirects = errors.New("too many redirects")

// newFetchClient returns an HTTP client that dials only what c allows,
// follows at most c's redirects (to http and https only), uses no proxy
// (a proxy would dial for us, past the address check) and keeps no
// connection after the fetch.
func newFetchClient(c Config) (*http.Client, *guardedDialer) {
	d := &guardedDialer{guard: newAddrGuard(c), resolver: net.DefaultResolver, timeout: 10 * time.Second}
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		ResponseHeaderTimeout:  c.timeout(),
		DisableKeepAlives:      true,
		MaxResponseHeaderBytes: 1 << 20,
	}
	max := c.maxRedirects()
	return &http.Client{Transport: tr, Timeout: c.timeout(),
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > max {
				chain := make([]string, 0, len(via)+1)
				for _, v := range via {
					chain = append(chain, v.URL.String())
				}
				chain = append(chain, req.URL.String())
				if max == 0 {
					return fmt.Errorf("%w: this configuration follows none (%s)", errTooManyRedirects, strings.Join(chain, " -> "))
				}
				return fmt.Errorf("%w: more than %d (%s)", errTooManyRedirects, max, strings.Join(chain, " -> "))
			}
			if s := req.URL.Scheme; s != "http" && s != "https" {
				return fmt.Errorf("a redirect to %s leaves http and https; not followed", req.URL.Redacted())
			}
			return nil
		}}, d
}

// fetchURL GETs u and reads at most maxBytes of the body.
func fetchURL(ctx context.Context, c Config, u *url.URL) (*fetched, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", webUserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain;q=0.9,application/json;q=0.9,*/*;q=0.5")
	var redirects []string
	client, dialer := newFetchClient(c)
	check := client.CheckRedirect
	client.CheckRedirect = func(r *http.Request, via []*http.Request) error {
		if err := check(r, via); err != nil {
			return err
		}
		redirects = append(redirects, via[len(via)-1].URL.String())
		return nil
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	f := &fetched{url: resp.Request.URL.String(), redirects: redirects, status: resp.StatusCode,
		statusText: http.StatusText(resp.StatusCode), contentType: resp.Header.Get("Content-Type"),
		declared: resp.ContentLength, private: dialer.private.Load()}
	limit := c.maxBytes()
	f.body, err = io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read the body: %w", err)
	}
	if int64(len(f.body)) > limit {
		f.body, f.cut = f.body[:limit], true
	}
	return f, nil
}

// describeFetchError turns a failed fetch into words the model can act on.
func describeFetchError(err error, u *url.URL, c Config) string {
	var blocked *blockedAddrError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var hostErr x509.HostnameError
	var unknownAuth x509.UnknownAuthorityError
	var netErr net.Error
	host := u.Host
	switch {
	case errors.As(err, &blocked):
		return fmt.Sprintf("refused to connect: %v. web_fetch reaches only public internet addresses, so that a page, a redirect or a DNS answer cannot lead it into your network; tools.web.allow_private or tools.web.allow_hosts in the configuration allow more", blocked)
	case errors.Is(err, errTooManyRedirects):
		return fmt.Sprintf("stopped: %v", unwrapURLError(err))
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return fmt.Sprintf("cannot resolve %s: no such host; check the URL", dnsErr.Name)
		}
		return fmt.Sprintf("cannot resolve %s: %v", dnsErr.Name, dnsErr.Err)
	case errors.As(err, &certErr), errors.As(err, &hostErr), errors.As(err, &unknownAuth):
		return fmt.Sprintf("the TLS certificate of %s is not valid: %v", host, unwrapURLError(err))
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Sprintf("cannot connect to %s: connection refused (nothing listens there)", host)
	case errors.Is(err, syscall.ECONNRESET):
		return fmt.Sprintf("the connection to %s was reset", host)
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return fmt.Sprintf("cannot reach %s: the network or host is unreachable (no internet access here?)", host)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Sprintf("timed out after %s waiting for %s", c.timeout(), host)
	}
	return fmt.Sprintf("cannot fetch %s: %v", u.Redacted(), unwrapURLError(err))
}

// unwrapURLError drops net/url's "Get "...": " prefix, which repeats the
// URL the model already knows.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}
