package web

import (
	"net/netip"
	"strings"
	"testing"
)

func TestNonPublicAddresses(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1":              "loopback",
		"127.1.2.3":              "loopback",
		"::1":                    "loopback",
		"::ffff:127.0.0.1":       "loopback",
		"10.0.0.1":               "private",
		"172.16.5.4":             "private",
		"192.168.1.1":            "private",
		"fc00::1":                "private",
		"fd12:3456::1":           "private",
		"169.254.169.254":        "link-local",
		"::ffff:169.254.169.254": "link-local",
		"fe80::1":                "link-local",
		"0.0.0.0":                "unspecified",
		"::":                     "unspecified",
		"0.1.2.3":                "this network",
		"100.64.0.1":             "shared",
		"224.0.0.251":            "multicast",
		"ff02::1":                "multicast",
		"255.255.255.255":        "broadcast",
		"240.0.0.1":              "reserved",
		"198.18.0.1":             "benchmarking",
		"192.0.2.10":             "documentation",
		"2001:db8::1":            "documentation",
		"fec0::1":                "site-local",
		"::7f00:1":               "IPv4-compatible",
		"64:ff9b::7f00:1":        "loopback address (127.0.0.1 inside an IPv6 address)",
		"64:ff9b::a9fe:a9fe":     "link-local address (169.254.169.254 inside",
		"64:ff9b:1::1":           "local-use NAT64",
		"2002:c0a8:0101::1":      "private address (192.168.1.1 inside",
	} {
		got := nonPublic(netip.MustParseAddr(addr))
		if got == "" || !strings.Contains(got, want) {
			t.Errorf("%s: %q, want it to contain %q", addr, got, want)
		}
	}
	for _, addr := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001::200e", "64:ff9b::808:808", "2002:808:808::1", "::ffff:8.8.8.8"} {
		if got := nonPublic(netip.MustParseAddr(addr)); got != "" {
			t.Errorf("%s is public, got %q", addr, got)
		}
	}
}

func TestTeredo(t *testing.T) {
	t.Parallel()
	// Teredo keeps the client's IPv4 address inverted in the last 32 bits:
	// ^c0a8:0101 = 3f57:fefe is 192.168.1.1.
	if got := nonPublic(netip.MustParseAddr("2001:0:4136:e378:8000:63bf:3f57:fefe")); !strings.Contains(got, "192.168.1.1") {
		t.Errorf("teredo with a private client: %q", got)
	}
	if got := nonPublic(netip.MustParseAddr("2001:0:4136:e378:8000:63bf:f7f7:f7f7")); got != "" {
		t.Errorf("teredo with a public client (8.8.8.8): %q", got)
	}
}

func TestAddrGuardAllowLists(t *testing.T) {
	t.Parallel()
	g := newAddrGuard(Config{AllowHosts: []string{"10.1.0.0/16", "192.168.7.7", "intranet.example", "*.corp.example", " Wiki.Local. "}})
	allowed := []struct{ host, addr string }{
		{"10.1.2.3", "10.1.2.3"},
		{"x", "192.168.7.7"},
		{"x", "::ffff:10.1.9.9"},
		{"intranet.example", "10.9.9.9"},
		{"INTRANET.example.", "127.0.0.1"},
		{"a.corp.example", "10.0.0.1"},
		{"a.b.corp.example", "10.0.0.1"},
		{"wiki.local", "192.168.0.1"},
		{"public.example", "8.8.8.8"},
	}
	for _, c := range allowed {
		if err := g.check(c.host, netip.MustParseAddr(c.addr)); err != nil {
			t.Errorf("%s at %s: %v", c.host, c.addr, err)
		}
	}
	refused := []struct{ host, addr string }{
		{"10.2.0.1", "10.2.0.1"},
		{"corp.example", "10.0.0.1"}, // *.corp.example is subdomains only
		{"intranet.example.evil", "10.0.0.1"},
		{"evilcorp.example", "10.0.0.1"},
		{"x", "192.168.7.8"},
	}
	for _, c := range refused {
		if err := g.check(c.host, netip.MustParseAddr(c.addr)); err == nil {
			t.Errorf("%s at %s was allowed", c.host, c.addr)
		}
	}
	if err := newAddrGuard(Config{AllowPrivate: true}).check("x", netip.MustParseAddr("127.0.0.1")); err != nil {
		t.Errorf("allow_private: %v", err)
	}
}

func TestNormalizeURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://example.org/a?b=1#frag": "https://example.org/a?b=1",
		"HTTP://Example.org":             "http://Example.org",
		"example.org/docs":               "https://example.org/docs",
		"localhost:8080/x":               "https://localhost:8080/x",
		"  https://example.org  ":        "https://example.org",
		"http://[::1]:8080/":             "http://[::1]:8080/",
	} {
		u, err := normalizeURL(in)
		if err != nil || u.String() != want {
			t.Errorf("%q: %v %v, want %s", in, u, err, want)
		}
	}
	for in, want := range map[string]string{
		"":                       "empty",
		"mailto:a@example.org":   "not mailto URLs",
		"javascript:alert(1)":    "not javascript URLs",
		"data:text/html,hi":      "not data URLs",
		"ftp://example.org/":     "not ftp URLs",
		"https:///path":          "no host",
		"/relative/path":         "no host",
		"https://a@example.org/": "user name or password",
		"http://example.org:0/":  "out of range",
		"http://exa mple.org/":   "does not parse",
		"https://" + strings.Repeat("a", maxURLLength): "at most",
	} {
		if _, err := normalizeURL(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%.40q: %v, want an error with %q", in, err, want)
		}
	}
}

func FuzzNormalizeURL(f *testing.F) {
	for _, s := range []string{"https://example.org/a#b", "example.org", "localhost:1", "mailto:x", "http://[::1]:80/", "http://%zz", "https://a:b@c/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := normalizeURL(raw)
		if err != nil {
			return
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" || u.User != nil || u.Fragment != "" {
			t.Fatalf("%q accepted as %q", raw, u)
		}
		if _, err := normalizeURL(u.String()); err != nil {
			t.Fatalf("%q accepted, but its normal form %q is not: %v", raw, u, err)
		}
	})
}

func FuzzNonPublic(f *testing.F) {
	for _, s := range [][]byte{{127, 0, 0, 1}, {8, 8, 8, 8}, make([]byte, 16)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		why := nonPublic(a)
		// Whatever the form, an address that reaches a loopback, private
		// or link-local IPv4 or IPv6 address is refused.
		u := a.Unmap()
		if (u.IsLoopback() || u.IsPrivate() || u.IsLinkLocalUnicast() || u.IsUnspecified() || u.IsMulticast()) && why == "" {
			t.Fatalf("%s passes as public", a)
		}
		// An IPv4 address and its IPv4-mapped form get one verdict.
		if u.Is4() {
			if got := nonPublic(netip.AddrFrom16(u.As16())); got != why {
				t.Fatalf("%s: %q, mapped form %q", a, why, got)
			}
		}
	})
}
