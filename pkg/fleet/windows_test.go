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
