package lock

import "testing"

// TestFoundWhat: unlock asks about every lock found, sorted, and about
// nothing when none was found.
func TestFoundWhat(t *testing.T) {
	found := Found{"prod-us": {"web": &Info{}}, "prod-eu": {"web": &Info{}, "api": &Info{}}}
	if got, want := found.What(), "the lock of api on prod-eu, web on prod-eu, web on prod-us"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	for _, none := range []Found{nil, {}} {
		if got := none.What(); got != "" {
			t.Errorf("none found: %q", got)
		}
	}
}
