package main

import (
	"bufio"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A profile is what one kubectl fleet run sent one cluster, read from its
// --v=6 log: the requests in order, and how many waits they make in
// sequence (requests in flight together count once), which at a given
// round trip time is most of a no-op's cost.
type profile struct {
	Scenario string   `json:"scenario"`
	Requests int      `json:"requests"`
	Objects  int      `json:"objectRequests"`
	Waits    int      `json:"waits"`
	Steps    []string `json:"steps"`
	// WaitMS is how long each wait took, from its first request's start
	// to the end of the last one in it, in milliseconds.
	WaitMS []int `json:"waitMilliseconds"`
	// BeforeMS is the time from the command's start to its first
	// request, AfterMS from the last response to its exit.
	BeforeMS int `json:"beforeMilliseconds"`
	AfterMS  int `json:"afterMilliseconds"`
	// first and last are the first request's start and the last one's end
	// (as times of day, of year 0).
	first, last time.Time
}

// responseLine matches client-go's request log at --v=6.
var responseLine = regexp.MustCompile(`^I\d{4} (\d\d:\d\d:\d\d\.\d{6}) .*"Response" verb="([A-Z]+)" url="([^"]+)" status="[^"]*" milliseconds=(\d+)`)

type request struct {
	start, end time.Time
	verb, path string
}

// parseProfile reads a --v=6 log; appNS is the app's namespace, whose
// objects' requests are summed up per kind.
func parseProfile(scenario, log, appNS string) profile {
	var reqs []request
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := responseLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		end, err := time.Parse("15:04:05.000000", m[1])
		if err != nil {
			continue
		}
		ms, _ := strconv.Atoi(m[4])
		u, err := url.Parse(m[3])
		if err != nil {
			continue
		}
		reqs = append(reqs, request{start: end.Add(-time.Duration(ms) * time.Millisecond), end: end, verb: m[2], path: u.Path})
	}
	p := profile{Scenario: scenario, Requests: len(reqs)}
	slices.SortStableFunc(reqs, func(a, b request) int { return a.start.Compare(b.start) })
	var (
		last, waitStart time.Time
		prev            string
		n               int
	)
	endWait := func() {
		if p.Waits > 0 {
			p.WaitMS = append(p.WaitMS, int(last.Sub(waitStart).Milliseconds()))
		}
	}
	flush := func() {
		if n > 0 {
			if n > 1 {
				p.Steps = append(p.Steps, fmt.Sprintf("%d× %s", n, prev))
			} else {
				p.Steps = append(p.Steps, prev)
			}
		}
	}
	for i, r := range reqs {
		// A request that started after all before it had ended (with a
		// little slack for the log's own delay) is one more wait.
		if i == 0 || !r.start.Before(last.Add(-5*time.Millisecond)) {
			endWait()
			p.Waits++
			waitStart = r.start
		}
		if i == 0 || r.end.After(last) { // (parsed times are of year 0, before the zero Time)
			last = r.end
		}
		step, object := shorten(r.verb, r.path, appNS)
		if object {
			p.Objects++
		}
		if step == prev {
			n++
			continue
		}
		flush()
		prev, n = step, 1
	}
	flush()
	endWait()
	if len(reqs) > 0 {
		p.first, p.last = reqs[0].start, last
	}
	return p
}

// shorten names a request by verb and resource: "GET configmaps/fleet-bench
// (kubectl-fleet)"; a request for one of the app's objects is named by its
// kind only ("PATCH configmaps of the app"), and reported as such.
func shorten(verb, path, appNS string) (string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// Drop "api/v1" or "apis/<group>/<version>".
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	}
	ns := ""
	if len(parts) >= 2 && parts[0] == "namespaces" {
		ns = parts[1]
		if len(parts) > 2 {
			parts = parts[2:]
		}
	}
	if ns == appNS && appNS != "" && (verb == "PATCH" || verb == "GET" && len(parts) > 1) {
		if len(parts) == 2 && parts[0] == "namespaces" {
			return verb + " the app's namespace", true
		}
		return verb + " " + parts[0] + " of the app", true
	}
	s := verb + " " + strings.Join(parts, "/")
	if ns != "" && !(len(parts) == 2 && parts[0] == "namespaces") {
		s += " (" + ns + ")"
	}
	return s, false
}
