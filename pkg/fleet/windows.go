package fleet

import (
	"fmt"
	"strings"
	"time"
	// The zone database inside the binary: a window's timeZone reads the
	// same on a machine (Windows, a scratch image) that has none.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
)

// Window is a group's deploy window, as Argo CD's sync windows: a cron
// schedule that opens it, how long it stays open, and the time zone the
// schedule is read in. apply and reconcile start writes to the group
// only while its windows let them (Group.Open).
type Window struct {
	// Kind is allow (writes only while one of the group's allow windows
	// is open) or deny (no writes while it is open).
	Kind string `yaml:"kind" jsonschema:"required,enum=allow,enum=deny"`
	// Schedule is a five-field cron expression (minute hour day month
	// weekday) for when the window opens: "0 9 * * 1-5".
	Schedule string `yaml:"schedule" jsonschema:"required"`
	// Duration is how long the window stays open once opened.
	Duration time.Duration `yaml:"duration" jsonschema:"required"`
	// TimeZone is an IANA zone the schedule is read in; default UTC.
	TimeZone string `yaml:"timeZone"`
}

// The window kinds.
const (
	Allow = "allow"
	Deny  = "deny"
)

// MaxWindowDuration bounds how long a window stays open once opened: a
// year. A deny window open for longer is a freeze, said with pause.
const MaxWindowDuration = 366 * 24 * time.Hour

// scheduleRef is when a schedule is asked whether it ever opens: cron
// searches five years ahead, which holds every day a five-field schedule
// can name (the 29th of February of 2000 among them), so a schedule of a
// day that never comes ("0 0 30 2 *") finds none.
var scheduleRef = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// schedule is the window's parsed schedule in its zone.
func (w Window) schedule() (cron.Schedule, *time.Location, error) {
	loc := time.UTC
	if w.TimeZone != "" {
		var err error
		if loc, err = time.LoadLocation(w.TimeZone); err != nil {
			return nil, nil, fmt.Errorf("timeZone %q: %w", w.TimeZone, err)
		}
	}
	s, err := parseSchedule(w.Schedule)
	if err != nil {
		return nil, nil, err
	}
	return s, loc, nil
}

// parseSchedule reads a five-field cron expression (or @daily, @weekly…).
// A time zone inside it (CRON_TZ=, TZ=) is refused, so that timeZone is
// the only one a window is read in; so is @every, which counts from
// whenever it is asked, not from a time of day; so is a schedule that
// never fires (the 30th of February).
func parseSchedule(spec string) (cron.Schedule, error) {
	f := strings.Fields(spec)
	switch {
	case len(f) > 0 && (strings.HasPrefix(f[0], "CRON_TZ=") || strings.HasPrefix(f[0], "TZ=")):
		return nil, fmt.Errorf("a time zone in the schedule (%s) is not read: give it as the window's timeZone", f[0])
	case len(f) > 0 && f[0] == "@every":
		return nil, fmt.Errorf("@every counts from whenever it is asked, not from a time of day: give a cron expression")
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, err
	}
	if s.Next(scheduleRef).IsZero() {
		return nil, fmt.Errorf("it never opens (no such day: the 30th of February, the 31st of April?)")
	}
	return s, nil
}

// openAt is when the window last opened at or before t if it is still
// open at t; ok is false when it is closed at t. It costs a few dozen
// of the schedule's Next, whatever the schedule and duration.
func (w Window) openAt(t time.Time) (opened time.Time, ok bool) {
	s, loc, err := w.schedule()
	if err != nil || w.Duration <= 0 || w.Duration > MaxWindowDuration {
		// Refused on load; a window that cannot be read closes the
		// group, whatever its kind (a deny window open, an allow one
		// closed).
		return t, w.Kind == Deny
	}
	// The first opening after t - Duration, if it is not after t, is
	// one the window is still open from (cron's Next is strictly after).
	start := s.Next(t.In(loc).Add(-w.Duration - time.Second).Truncate(time.Minute))
	if start.IsZero() || start.After(t) {
		return time.Time{}, false
	}
	// The latest opening at or before t, when they overlap: halve the
	// span in which it lies (start is an opening, none is in (hi, t]).
	hi := t
	for i := 0; i < 64 && hi.Sub(start) > time.Minute; i++ {
		mid := start.Add(hi.Sub(start) / 2).Truncate(time.Minute)
		if next := s.Next(mid); !next.IsZero() && !next.After(t) && next.After(start) {
			start = next
		} else {
			hi = mid
		}
	}
	for i := 0; i < 2; i++ {
		next := s.Next(start)
		if next.IsZero() || next.After(t) {
			break
		}
		start = next
	}
	return start, t.Before(start.Add(w.Duration))
}

// String is the window as the messages say it: "allow 0 9 * * 1-5 for
// 8h0m0s (Europe/Berlin)".
func (w Window) String() string {
	s := fmt.Sprintf("%s %s for %s", w.Kind, w.Schedule, w.Duration)
	if w.TimeZone != "" {
		s += " (" + w.TimeZone + ")"
	}
	return s
}

// Open reports whether the group's windows let a rollout write to it at
// t: no deny window open, and, when it has allow windows, one of them
// open. When they do not, next is when they next do (zero when not
// within a year) and why says which window closes it.
func (g *Group) Open(t time.Time) (open bool, next time.Time, why string) {
	ok, why, until := g.openNow(t)
	if ok {
		return true, time.Time{}, ""
	}
	for at, i := until, 0; i < 1000 && !at.IsZero() && at.Before(t.AddDate(1, 0, 0)); i++ {
		open, _, later := g.openNow(at)
		if open {
			return false, at, why
		}
		if !later.After(at) {
			break
		}
		at = later
	}
	return false, time.Time{}, why
}

// openNow is Open at t alone: whether the windows allow writes, why not,
// and the earliest time after t at which that may change.
func (g *Group) openNow(t time.Time) (bool, string, time.Time) {
	var allows []string
	change := time.Time{}
	sooner := func(c time.Time) {
		if change.IsZero() || c.Before(change) {
			change = c
		}
	}
	denied, allowed := "", false
	for _, w := range g.Windows {
		opened, open := w.openAt(t)
		switch {
		case w.Kind == Deny && open:
			denied = "deny window " + w.String() + " is open"
			sooner(opened.Add(w.Duration))
		case w.Kind == Allow && open:
			allowed = true
		case w.Kind == Allow:
			allows = append(allows, w.String())
			if s, loc, err := w.schedule(); err == nil {
				if next := s.Next(t.In(loc)); !next.IsZero() {
					sooner(next)
				}
			}
		}
	}
	switch {
	case denied != "":
		return false, denied, change
	case len(allows) > 0 && !allowed:
		return false, "no allow window is open (" + strings.Join(allows, "; ") + ")", change
	}
	return true, "", change
}

// validateWindows checks a group's windows.
func validateWindows(e *errs, p string, ws []Window) {
	for i, w := range ws {
		wp := fmt.Sprintf("%s.windows[%d]", p, i)
		if w.Kind != Allow && w.Kind != Deny {
			e.add(wp+".kind", "want allow or deny, got %q", w.Kind)
		}
		switch {
		case w.Duration <= 0:
			e.add(wp+".duration", "must be positive, got %s", w.Duration)
		case w.Duration > MaxWindowDuration:
			e.add(wp+".duration", "at most %s (a year), got %s: a freeze longer than that is a pause (kubectl fleet pause)", MaxWindowDuration, w.Duration)
		}
		if _, err := parseSchedule(w.Schedule); err != nil {
			e.add(wp+".schedule", "want a cron expression such as '0 9 * * 1-5' (minute hour day month weekday): %v", err)
		}
		if _, err := time.LoadLocation(w.TimeZone); err != nil {
			e.add(wp+".timeZone", "want an IANA time zone such as Europe/Berlin: %v", err)
		}
	}
}
