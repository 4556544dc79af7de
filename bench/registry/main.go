// Command registry is the publish benchmark's OCI registry: go-containerregistry's
// in-memory registry on a loopback port, in a process of its own so that
// its CPU is measured apart from the tools'. It prints its address, and
// GET /bench/pushed answers the bytes pushed to it so far (request
// bodies of blob uploads and manifests) and the requests it answered so
// far, separated by a space.
package main

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	var pushed, requests atomic.Int64
	logged := os.Getenv("BENCH_REGISTRY_LOG") != "" // each request on stderr
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	mux := http.NewServeMux()
	mux.HandleFunc("/bench/pushed", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, pushed.Load(), " ", requests.Load()) })
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if logged {
			fmt.Fprintln(os.Stderr, r.Method, r.URL.Path, r.URL.RawQuery)
		}
		if r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodPost {
			r.Body = counting{r.Body, &pushed}
		}
		reg.ServeHTTP(w, r)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(l.Addr().String())
	if err := http.Serve(l, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

type counting struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c counting) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}
