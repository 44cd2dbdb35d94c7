package testport

import (
	"net"
	"strconv"
	"testing"
)

// Ports are below the ephemeral range, free, and never handed out twice.
func TestFree(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		p := Free(t)
		if p < low || p >= low+span || seen[p] {
			t.Fatalf("port %d: outside %d-%d or handed out twice", p, low, low+span-1)
		}
		seen[p] = true
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
