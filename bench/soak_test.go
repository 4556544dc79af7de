package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestVerdict: a figure grows when its peak after the warm-up passes its
// peak during it by more than the tolerance and its slack (connections
// 3 → 5 is within the slack of 2), whichever pass it is in.
func TestVerdict(t *testing.T) {
	pass := func(at float64, rss, heap, goroutines, fds, conns int64) soakPass {
		return soakPass{At: at, soakSample: soakSample{RSS: rss, Heap: heap, Goroutines: goroutines, FDs: fds, Conns: conns}}
	}
	const mi = 1 << 20
	flat := []soakPass{pass(10, 100*mi, 50*mi, 20, 10, 3), pass(50, 105*mi, 40*mi, 22, 10, 3), pass(70, 108*mi, 54*mi, 21, 11, 3), pass(100, 110*mi, 55*mi, 22, 11, 5)}
	growing := append(flat[:3:3], pass(100, 100*mi, 70*mi, 20, 13, 6))
	for _, tc := range []struct {
		name   string
		passes []soakPass
		grew   []string
	}{
		{"within 10%", flat, nil},
		{"heap, fds and connections grew", growing, []string{"live Go heap", "open fds", "connections"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs, err := verdict(tc.passes, time.Minute, 0.10)
			if err != nil {
				t.Fatal(err)
			}
			var grew []string
			for _, g := range gs {
				if g.Grew {
					grew = append(grew, g.Metric)
				}
			}
			if strings.Join(grew, ",") != strings.Join(tc.grew, ",") {
				t.Errorf("grew %q, want %q (%+v)", grew, tc.grew, gs)
			}
		})
	}
	if _, err := verdict(flat[:2], time.Minute, 0.10); err == nil {
		t.Error("no pass after the warm-up, and no error")
	}
}

// TestWithin: over a pass, memory keeps its peak and the counts their
// rest, the fewest seen.
func TestWithin(t *testing.T) {
	var s soakSample
	for _, now := range []soakSample{{100, 40, 30, 12, 5}, {120, 35, 8, 9, 2}, {110, 50, 12, 10, 3}} {
		s = s.within(now)
	}
	if want := (soakSample{120, 50, 8, 9, 2}); s != want {
		t.Errorf("%+v, want %+v", s, want)
	}
}

// TestSplitResults: a run that makes one section keeps the file's
// others.
func TestSplitResults(t *testing.T) {
	md := "# make bench\ncompare\n\n" + scaleHeading + "\nscale\n\n" + soakHeading + "\nsoak\n\n" + deliveredSoakHeading + "\ndelivered\n"
	got := splitResults(md)
	want := []string{"# make bench\ncompare\n\n", scaleHeading + "\nscale\n\n", soakHeading + "\nsoak\n\n", deliveredSoakHeading + "\ndelivered\n"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("section %d: %q, want %q", i, got[i], want[i])
		}
	}
	if got := splitResults(soakHeading + "\nsoak\n"); got[0] != "" || got[1] != "" || got[2] != soakHeading+"\nsoak\n" {
		t.Errorf("a file of the soak alone: %q", got)
	}
	if got := splitResults(deliveredSoakHeading + "\nd\n"); got[2] != "" || got[3] != deliveredSoakHeading+"\nd\n" {
		t.Errorf("a file of the delivered soak alone: %q", got)
	}
	if got := splitResults("compare\n"); got[0] != "compare\n" || got[1] != "" || got[2] != "" || got[3] != "" {
		t.Errorf("a file of the comparison alone: %q", got)
	}
}

// TestScrape: one reader of Prometheus text serves the scaling run (a
// labelled series summed) and the soak (unlabelled gauges), comments and
// the bearer token included.
func TestScrape(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines 12\nprocess_resident_memory_bytes 1.5e+08\n"+
			`apiserver_request_total{code="200",verb="GET"} 7`+"\n"+`apiserver_request_total{code="201",verb="POST"} 3`+"\n")
	}))
	defer srv.Close()
	n, err := scrapeOne(t.Context(), srv.Client(), srv.URL, "tok")
	if err != nil || n != 10 {
		t.Errorf("requests %d, %v; want 10", n, err)
	}
	got := map[string]float64{}
	if err := scrape(t.Context(), srv.Client(), srv.URL, "tok", func(s string, v float64) { got[s] = v }); err != nil {
		t.Fatal(err)
	}
	if got["go_goroutines"] != 12 || got["process_resident_memory_bytes"] != 1.5e8 || len(got) != 4 {
		t.Errorf("samples %v", got)
	}
	if _, err := scrapeOne(t.Context(), srv.Client(), srv.URL, ""); err == nil {
		t.Error("a refused scrape is no error")
	}
}
