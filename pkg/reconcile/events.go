package reconcile

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
)

// Line is one of the loop's own lines: LoopEvent, PassEvent.
type Line interface {
	// Text is the line said in text.
	Text() string
}

// Log says the loop's own lines on W: their text, or with JSON one JSON
// object a line (--log-format json).
type Log struct {
	W    io.Writer
	JSON bool
}

// Say writes one line of the loop's own (not a cluster's).
func (l Log) Say(ev Line) {
	if !l.JSON {
		fmt.Fprintln(l.W, ev.Text())
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	_, _ = l.W.Write(append(b, '\n'))
}

// LoopEvent is a line the loop says (a pass started, a signal, the
// metrics server's address).
type LoopEvent struct {
	Type string `json:"type"`
	Msg  string `json:"msg"`
	Addr string `json:"addr,omitempty"`
}

// Note is the loop's line msg.
func Note(msg string) LoopEvent { return LoopEvent{Type: "reconcile", Msg: msg} }

// Text implements Line.
func (e LoopEvent) Text() string { return e.Msg }

// ClusterEvent is what a pass found on one cluster (and app): decision
// "unchanged", "changed", "unverified", "drifted" or "error", and what it
// does about it. It is a rollout.Event.
type ClusterEvent struct {
	Type     string `json:"type"`
	Msg      string `json:"msg"`
	Pass     int    `json:"pass"`
	Cluster  string `json:"cluster"`
	App      string `json:"app,omitempty"`
	Decision string `json:"decision"`
	// Apply says whether the cluster is applied in this pass.
	Apply    bool     `json:"apply"`
	Revision int      `json:"revision,omitempty"`
	Drifted  []string `json:"drifted,omitempty"`
	Error    string   `json:"error,omitempty"`
}

// Where implements rollout.Event.
func (e ClusterEvent) Where() string { return e.Cluster }

// Text implements rollout.Event.
func (e ClusterEvent) Text() string { return e.Msg }

// PassEvent is a pass's end: its result, and the clusters it applied,
// left unchanged, or found drifted and did not correct.
type PassEvent struct {
	Type      string   `json:"type"`
	Msg       string   `json:"msg"`
	Pass      int      `json:"pass"`
	Result    string   `json:"result"`
	Seconds   float64  `json:"seconds"`
	Applied   []string `json:"applied,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
	Drifted   []string `json:"drifted,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// Ended is ev, the lists of pass n, at its end after d with err.
func (ev PassEvent) Ended(n int, d time.Duration, err error) PassEvent {
	ev.Type, ev.Pass, ev.Seconds = "pass", n, d.Seconds()
	ev.Result, ev.Error = "succeeded", ""
	if err != nil {
		ev.Result, ev.Error = "failed", err.Error()
	}
	ev.Msg = fmt.Sprintf("pass %d %s in %s", n, ev.Result, d.Round(time.Millisecond))
	return ev
}

// Text implements Line: the message, the lists, and the error on the same
// line.
func (ev PassEvent) Text() string {
	line := ev.Msg
	for _, part := range []struct {
		what  string
		names []string
	}{{"rolled out to", ev.Applied}, {"unchanged", ev.Unchanged}, {"drifted, not corrected", ev.Drifted}} {
		if len(part.names) > 0 {
			line += fmt.Sprintf("; %s: %s", part.what, strings.Join(part.names, ", "))
		}
	}
	if ev.Error != "" {
		line += ": " + strings.ReplaceAll(ev.Error, "\n", "; ")
	}
	return line
}
