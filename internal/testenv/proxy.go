package testenv

import (
	"io"
	"net"
	"sync"
	"time"
)

// Proxy is a TCP proxy on loopback that delays every chunk of data by a
// fixed time in each direction, so that a local API server behaves like a
// remote one (25ms each way is a 50ms round trip). It delays without
// limiting throughput: chunks are timestamped on arrival and released when
// their time comes.
type Proxy struct {
	// Addr is the proxy's listening address.
	Addr string

	l      net.Listener
	target string
	delay  time.Duration
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	// cut: the cluster is unreachable (Cut): connections are closed as
	// they come, until Restore.
	cut bool
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string, oneWay time.Duration) (*Proxy, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: l.Addr().String(), l: l, target: target, delay: oneWay, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		if p.isCut() {
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		p.wg.Add(1)
		go p.relay(in, out)
	}
}

// relay pipes both ways between in and out, and closes both once both
// directions are done: a fleet of 1,000 clusters opens thousands of
// connections over a run, which must not stay open until Close.
func (p *Proxy) relay(in, out net.Conn) {
	defer p.wg.Done()
	var both sync.WaitGroup
	both.Go(func() { p.pipe(out, in) })
	both.Go(func() { p.pipe(in, out) })
	both.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range []net.Conn{in, out} {
		_ = c.Close()
		delete(p.conns, c)
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = true
	}
	return true
}

type chunk struct {
	data []byte
	at   time.Time
}

// pipe copies src to dst, each chunk delayed by p.delay.
func (p *Proxy) pipe(dst, src net.Conn) {
	queue := make(chan chunk, 1024)
	go func() {
		defer close(queue)
		for {
			buf := make([]byte, 32*1024)
			n, err := src.Read(buf)
			if n > 0 {
				queue <- chunk{buf[:n], time.Now().Add(p.delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range queue {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	// Half-close so the other side sees EOF, then drain what is left.
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		_ = dst.Close()
	}
	for range queue {
	}
	_, _ = io.Copy(io.Discard, src)
}

// Cut makes the cluster unreachable, as a network partition or a server
// gone does: every open connection is closed and new ones are closed as
// soon as they are accepted, until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
}

// Restore makes a Cut cluster reachable again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *Proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.l.Close()
	p.wg.Wait()
}
