package testenv

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestFaultProxy(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
	}))
	defer backend.Close()
	p, err := NewFaultProxy(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, ForceAttemptHTTP2: true}}
	get := func(path string) (string, error) {
		req, _ := http.NewRequest(http.MethodGet, p.URL+path, nil)
		req.Header.Set("Authorization", "Bearer x")
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	// Up: forwarded with the headers.
	if got, err := get("/a"); err != nil || got != "GET /a Bearer x" {
		t.Fatalf("up: %q, %v", got, err)
	}
	// Two /b requests pass, the third cuts: it and every later one fail.
	p.After(2, func(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/b") }, Down)
	for i := 0; i < 2; i++ {
		if _, err := get("/b"); err != nil {
			t.Fatalf("before the cut: %v", err)
		}
	}
	if _, err := get("/a"); err != nil {
		t.Fatalf("a request that does not match: %v", err)
	}
	if _, err := get("/b"); err == nil {
		t.Fatal("the third /b request was answered")
	}
	if _, err := get("/a"); err == nil || p.Mode() != Down {
		t.Fatalf("after the cut: %v, mode %s", err, p.Mode())
	}
	// Back on the same address.
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if _, err := get("/a"); err != nil {
		t.Fatalf("restored: %v", err)
	}
	// Hung: the request is held until the client gives up, or until
	// Restore lets it go.
	p.Hang()
	short := *client
	short.Timeout = 300 * time.Millisecond
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/c", nil)
	start := time.Now()
	if _, err := short.Do(req); err == nil || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("hung: %v after %s", err, time.Since(start))
	}
	for p.Held() > 0 { // the server sees the client give up
		time.Sleep(10 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() {
		_, err := get("/d")
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.WaitHeld(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("released: %v", err)
	}
	// Forwarded: what reached the backend (not /b cut, nor /c whose
	// client gave up while held).
	var paths []string
	for _, r := range p.Requests() {
		paths = append(paths, r.Path+":"+r.Mode.String())
		if !r.Forwarded.IsZero() {
			paths[len(paths)-1] += ":sent"
		}
	}
	if got := strings.Join(paths, " "); got != "/a:up:sent /b:up:sent /b:up:sent /a:up:sent /b:down /a:up:sent /c:hung /d:hung:sent" {
		t.Errorf("log: %s", got)
	}
}

func TestOpenPTY(t *testing.T) {
	control, terminal, err := OpenPTY()
	if err != nil {
		if runtime.GOOS == "linux" {
			t.Fatal(err) // implemented there: an error is a failure
		}
		t.Skip(err)
	}
	defer control.Close()
	defer terminal.Close()
	if _, err := control.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	n, err := terminal.Read(buf)
	if err != nil || string(buf[:n]) != "y\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
}

func TestFaultProxyFailDiscovery(t *testing.T) {
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.URL.Path+" "+r.Header.Get("Accept"))
	}))
	defer backend.Close()
	p, err := NewFaultProxy(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, p.URL+path, nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	aggregated := "/apis application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
	if code, got := get("/apis"); code != 200 || got != aggregated {
		t.Fatalf("before: %d %q", code, got)
	}
	p.FailDiscovery("g.example.com/v1")
	for path, want := range map[string]string{
		"/apis":                  "/apis application/json",
		"/api":                   "/api application/json",
		"/apis/g.example.com":    "/apis/g.example.com " + aggregated[len("/apis "):],
		"/apis/h.example.com/v1": "/apis/h.example.com/v1 " + aggregated[len("/apis "):],
	} {
		if code, got := get(path); code != 200 || got != want {
			t.Errorf("%s: %d %q, want %q", path, code, got, want)
		}
	}
	if code, got := get("/apis/g.example.com/v1"); code != http.StatusServiceUnavailable || !strings.Contains(got, "ServiceUnavailable") {
		t.Errorf("the failed group version: %d %q", code, got)
	}
	p.FailDiscovery("")
	if code, got := get("/apis"); code != 200 || got != aggregated {
		t.Fatalf("served again: %d %q", code, got)
	}
}
