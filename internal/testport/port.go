// Package testport hands tests loopback ports for servers that must know
// their port before they start (a server restarted on the same port, a
// command given --listen).
package testport

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// The range ports come from: below Linux's ephemeral range (32768-60999
// by default). A port the kernel picks for :0 comes from that range, and
// so does the local port of every outgoing connection, which could take a
// port handed out by :0 in the time before its server listens on it.
const (
	low  = 20000
	span = 12000
)

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Free returns a loopback port nobody listens on now, below the
// ephemeral range, and never the same one twice in a process.
func Free(t testing.TB) int {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	for range 200 {
		p := low + rand.IntN(span)
		if given[p] {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		_ = l.Close()
		given[p] = true
		return p
	}
	t.Fatalf("no free loopback port in %d-%d", low, low+span-1)
	return 0
}
