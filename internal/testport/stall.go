package testport

import (
	"net"
	"sync"
	"testing"
)

// StallProxy forwards TCP connections to a target and can stall them all:
// paused, it reads no more from either side, so the bytes wait in the
// kernel's buffers and neither end sees its connection close (a link
// that stalls, a peer that stops answering).
type StallProxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	cond   *sync.Cond
	paused bool
	conns  []net.Conn
}

// Stall starts a proxy to target (host:port) on a loopback port; it
// closes when the test ends.
func Stall(t testing.TB, target string) *StallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &StallProxy{ln: ln, target: target}
	p.cond = sync.NewCond(&p.mu)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

// Addr is the proxy's host:port.
func (p *StallProxy) Addr() string { return p.ln.Addr().String() }

// Pause stalls every connection (on) or lets them go on (off).
func (p *StallProxy) Pause(on bool) {
	p.mu.Lock()
	p.paused = on
	p.mu.Unlock()
	p.cond.Broadcast()
}

func (p *StallProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		go p.pipe(up, c)
		go p.pipe(c, up)
	}
}

// hold waits while the proxy is paused.
func (p *StallProxy) hold() {
	p.mu.Lock()
	for p.paused {
		p.cond.Wait()
	}
	p.mu.Unlock()
}

// pipe copies src to dst, holding each read and write while paused.
func (p *StallProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		p.hold()
		n, err := src.Read(buf)
		if n > 0 {
			p.hold()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *StallProxy) close() {
	_ = p.ln.Close()
	p.Pause(false)
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
}
