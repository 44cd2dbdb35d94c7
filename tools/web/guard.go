package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// addrGuard decides which addresses web_fetch may connect to. It is
// applied when dialing, to the address actually dialed, so a DNS answer
// that changes between lookups, or a redirect to a private address, is
// caught as surely as a private address in the URL.
type addrGuard struct {
	allowPrivate bool
	hosts        []string       // lower-case names; "*.x" matches subdomains of x
	nets         []netip.Prefix // networks allowed although not public
}

func newAddrGuard(c Config) addrGuard {
	g := addrGuard{allowPrivate: c.AllowPrivate}
	for _, h := range c.AllowHosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if p, err := netip.ParsePrefix(h); err == nil {
			g.nets = append(g.nets, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(h); err == nil {
			g.nets = append(g.nets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		if h != "" {
			g.hosts = append(g.hosts, strings.TrimSuffix(h, "."))
		}
	}
	return g
}

// hostAllowed reports whether host is named in the allow-list.
func (g addrGuard) hostAllowed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range g.hosts {
		if h == host {
			return true
		}
		if dom, ok := strings.CutPrefix(h, "*."); ok && strings.HasSuffix(host, "."+dom) {
			return true
		}
	}
	return false
}

// blockedAddrError is a refused connection: the address and why.
type blockedAddrError struct {
	host string
	addr netip.Addr
	why  string
}

func (e *blockedAddrError) Error() string {
	if _, err := netip.ParseAddr(e.host); err != nil && e.host != "" {
		return fmt.Sprintf("%s resolves to %s, %s", e.host, e.addr, e.why)
	}
	return fmt.Sprintf("%s is %s", e.addr, e.why)
}

// check refuses addr unless it is public or allowed; host is the name
// being dialed (for the allow-list and the message).
func (g addrGuard) check(host string, addr netip.Addr) error {
	if g.allowPrivate || g.hostAllowed(host) {
		return nil
	}
	addr = addr.Unmap()
	for _, p := range g.nets {
		if p.Contains(addr) {
			return nil
		}
	}
	if why := nonPublic(addr); why != "" {
		return &blockedAddrError{host: host, addr: addr, why: why}
	}
	return nil
}

// Address ranges that are not the public internet, beyond what netip's
// predicates cover.
var nonPublicNets = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "an IETF protocol address"},
	{netip.MustParsePrefix("192.0.2.0/24"), "a documentation address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("198.51.100.0/24"), "a documentation address"},
	{netip.MustParsePrefix("203.0.113.0/24"), "a documentation address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
	{netip.MustParsePrefix("::/96"), "an IPv4-compatible (deprecated) address"},
	{netip.MustParsePrefix("100::/64"), "a discard address"},
	{netip.MustParsePrefix("2001:db8::/32"), "a documentation address"},
	{netip.MustParsePrefix("fec0::/10"), "a site-local address"},
}

// Prefixes of IPv6 addresses that carry an IPv4 address, which is what
// they finally reach.
var (
	nat64Prefix  = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local   = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	teredoPrefix = netip.MustParsePrefix("2001::/32")
)

// nonPublic says why addr is not a public address, or "" when it is.
func nonPublic(addr netip.Addr) string {
	addr = addr.Unmap()
	switch {
	case !addr.IsValid():
		return "not an address"
	case addr.IsLoopback():
		return "a loopback address"
	case addr.IsUnspecified():
		return "the unspecified address"
	case addr.IsPrivate():
		return "a private address"
	case addr.IsLinkLocalUnicast():
		return "a link-local address"
	case addr.IsMulticast():
		return "a multicast address"
	case addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "the broadcast address"
	}
	for _, n := range nonPublicNets {
		if n.p.Contains(addr) {
			return n.why
		}
	}
	if addr.Is6() {
		b := addr.As16()
		var v4 netip.Addr
		switch {
		case nat64Prefix.Contains(addr):
			v4 = netip.AddrFrom4([4]byte(b[12:16]))
		case nat64Local.Contains(addr):
			return "a local-use NAT64 address"
		case sixToFour.Contains(addr):
			v4 = netip.AddrFrom4([4]byte(b[2:6]))
		case teredoPrefix.Contains(addr):
			// The client's IPv4 address is stored inverted.
			v4 = netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]})
		}
		if v4.IsValid() {
			if why := nonPublic(v4); why != "" {
				return why + " (" + v4.String() + " inside an IPv6 address)"
			}
		}
	}
	return ""
}

// guardedDialer dials only addresses the guard allows: it resolves the
// host itself, checks every address, and dials the checked addresses (the
// socket's Control hook checks the address once more, just before the
// connection is made).
type guardedDialer struct {
	guard    addrGuard
	resolver *net.Resolver
	timeout  time.Duration
	// private is set once a connection reached a non-public address
	// (which the configuration allowed).
	private atomic.Bool
}

func (d *guardedDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		addrs, err = d.resolver.LookupNetIP(ctx, ipNetwork(network), host)
		if err != nil {
			return nil, err
		}
	}
	var firstErr error
	for _, a := range addrs {
		if err := d.guard.check(host, a); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		dialer := net.Dialer{Timeout: d.timeout, Control: func(_, raw string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(raw)
			if err != nil {
				return fmt.Errorf("dial %s: %w", raw, err)
			}
			return d.guard.check(host, ap.Addr())
		}}
		conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
		if err == nil {
			if nonPublic(a) != "" {
				d.private.Store(true)
			}
			return conn, nil
		}
		if firstErr == nil || isBlocked(firstErr) {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if firstErr == nil {
		firstErr = fmt.Errorf("%s has no address", host)
	}
	return nil, firstErr
}

func ipNetwork(network string) string {
	switch network {
	case "tcp4":
		return "ip4"
	case "tcp6":
		return "ip6"
	}
	return "ip"
}

func isBlocked(err error) bool {
	var b *blockedAddrError
	return errors.As(err, &b)
}
