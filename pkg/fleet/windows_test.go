package fleet

import (
	"strings"
	"testing"
	"time"
)

// TestOpen: allow windows open a group on their schedule in their zone,
// a deny window closes it, and a closed group says when it opens next
// and why it is closed.
func TestOpen(t *testing.T) {
	weekdays := Window{Kind: Allow, Schedule: "0 9 * * 1-5", Duration: 8 * time.Hour, TimeZone: "Europe/Berlin"}
	christmas := Window{Kind: Deny, Schedule: "0 0 24 12 *", Duration: 48 * time.Hour}
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tt := range []struct {
		name    string
		windows []Window
		now     string
		next    string // "" when open
		why     string
	}{
		{"no windows", nil, "2026-11-28T03:00:00Z", "", ""},
		{"in office hours", []Window{weekdays}, "2026-11-26T10:00:00Z", "", ""},
		{"the evening", []Window{weekdays}, "2026-11-26T17:00:00Z", "2026-11-27T08:00:00Z", "no allow window is open (allow 0 9 * * 1-5 for 8h0m0s (Europe/Berlin))"},
		{"the weekend", []Window{weekdays}, "2026-11-28T12:00:00Z", "2026-11-30T08:00:00Z", "no allow window"},
		{"christmas", []Window{christmas}, "2026-12-25T10:00:00Z", "2026-12-26T00:00:00Z", "deny window deny 0 0 24 12 * for 48h0m0s is open"},
		{"christmas eve, a weekday", []Window{weekdays, christmas}, "2026-12-24T10:00:00Z", "2026-12-28T08:00:00Z", "deny window"},
		{"summer time", []Window{weekdays}, "2026-07-01T06:30:00Z", "2026-07-01T07:00:00Z", "no allow window"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := Group{Name: "production", Windows: tt.windows}
			open, next, why := g.Open(at(tt.now))
			if tt.next == "" {
				if !open {
					t.Errorf("closed (%s), want open", why)
				}
				return
			}
			if open || !next.Equal(at(tt.next)) || !strings.HasPrefix(why, tt.why) {
				t.Errorf("open %v, next %s, why %q; want closed until %s: %q", open, next.UTC().Format(time.RFC3339), why, tt.next, tt.why)
			}
		})
	}
}

// TestOpenEnds: windows that validation refuses (a day that never
// comes, a duration of centuries) still get an answer from Open, at
// once, and the answer is closed: a window that cannot be read fails
// closed. Before, the first spun forever and the second for minutes.
func TestOpenEnds(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		w    Window
	}{
		{"the 30th of February", Window{Kind: Allow, Schedule: "0 0 30 2 *", Duration: time.Hour}},
		{"the 31st of April", Window{Kind: Allow, Schedule: "0 0 31 4 *", Duration: time.Hour}},
		{"a deny window of centuries", Window{Kind: Deny, Schedule: "* * * * *", Duration: 2000000 * time.Hour}},
		{"a schedule in another zone", Window{Kind: Allow, Schedule: "CRON_TZ=Asia/Tokyo * * * * *", Duration: time.Hour}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan bool, 1)
			go func() {
				g := Group{Name: "production", Windows: []Window{tt.w}}
				open, _, _ := g.Open(now)
				done <- open
			}()
			select {
			case open := <-done:
				if open {
					t.Errorf("open, want closed: a window that cannot be read closes the group")
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Open has not answered in 30s")
			}
		})
	}
}

// TestOpenOverlapping: a deny window whose openings overlap (every
// minute for a day) stays open until a day after the latest opening,
// found without walking every minute.
func TestOpenOverlapping(t *testing.T) {
	w := Window{Kind: Deny, Schedule: "* * * * *", Duration: MaxWindowDuration}
	now := time.Date(2026, 11, 26, 12, 0, 30, 0, time.UTC)
	opened, ok := w.openAt(now)
	if !ok || !opened.Equal(now.Truncate(time.Minute)) {
		t.Errorf("openAt = %s, %v; want the minute before, open", opened, ok)
	}
	daily := Window{Kind: Deny, Schedule: "0 3 * * *", Duration: 48 * time.Hour}
	opened, ok = daily.openAt(now)
	if want := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC); !ok || !opened.Equal(want) {
		t.Errorf("openAt = %s, %v; want %s, open", opened, ok, want)
	}
}
