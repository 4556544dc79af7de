package testenv

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// serve listens on loopback until the test ends, handles each connection
// with handle, then closes it, and returns its address.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().String()
}

// TestProxyDelays checks that a round trip through the proxy takes at
// least twice the one-way delay, and that data arrives whole and in order.
func TestProxyDelays(t *testing.T) {
	echo := serve(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			if _, err := c.Write(line); err != nil {
				return
			}
		}
	})
	const oneWay = 30 * time.Millisecond
	p, err := NewProxy(echo, oneWay)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReader(c)
	for i := 0; i < 3; i++ {
		start := time.Now()
		if _, err := c.Write([]byte("ping\n")); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadString('\n')
		if err != nil || line != "ping\n" {
			t.Fatalf("got %q, %v", line, err)
		}
		if rtt := time.Since(start); rtt < 2*oneWay {
			t.Errorf("round trip %s, want at least %s", rtt, 2*oneWay)
		}
	}
}

// A connection both ends closed is closed in the proxy too: a long run
// through it (1,000 clusters, several commands) does not pile up
// descriptors until Close.
func TestProxyClosesFinishedConnections(t *testing.T) {
	server := serve(t, func(c net.Conn) { _, _ = c.Read(make([]byte, 1)) }) // closes once the client has
	p, err := NewProxy(server, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 5 {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	open := func() int {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.conns)
	}
	deadline := time.Now().Add(5 * time.Second)
	for open() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := open(); n > 0 {
		t.Errorf("%d connections still open in the proxy after both ends closed", n)
	}
}

// A cut proxy closes the open connection and every new one; restored, it
// relays again.
func TestProxyCutAndRestore(t *testing.T) {
	server := serve(t, func(c net.Conn) { _, _ = io.Copy(c, c) }) // echoes
	p, err := NewProxy(server, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	echoes := func(c net.Conn) bool {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("x")); err != nil {
			return false
		}
		b := make([]byte, 1)
		_, err := io.ReadFull(c, b)
		return err == nil && b[0] == 'x'
	}
	open, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	if !echoes(open) {
		t.Fatal("no echo before the cut")
	}
	p.Cut()
	if echoes(open) {
		t.Error("a connection open at the cut still relays")
	}
	if c, err := net.Dial("tcp", p.Addr); err == nil {
		if echoes(c) {
			t.Error("a connection made after the cut relays")
		}
		c.Close()
	}
	p.Restore()
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !echoes(c) {
		t.Error("no echo after Restore")
	}
}
