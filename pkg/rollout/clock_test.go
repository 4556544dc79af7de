package rollout

import (
	"strings"
	"testing"
	"time"
)

// EnvClock: unset, the machine's clock (nil); an RFC 3339 time, a clock
// that starts there and runs on; anything else, an error naming it.
func TestEnvClock(t *testing.T) {
	t.Setenv(nowEnv, "")
	if now, err := EnvClock(); now != nil || err != nil {
		t.Errorf("unset: a clock (%v), %v; want nil, nil", now != nil, err)
	}
	t.Setenv(nowEnv, "next tuesday")
	if now, err := EnvClock(); now != nil || err == nil || !strings.Contains(err.Error(), `$KUBECTL_FLEET_NOW "next tuesday": want an RFC 3339 time`) {
		t.Errorf("not a time: a clock (%v), %v", now != nil, err)
	}
	t.Setenv(nowEnv, "2026-12-24T10:00:00Z")
	now, err := EnvClock()
	if err != nil || now == nil {
		t.Fatalf("a time: a clock (%v), %v", now != nil, err)
	}
	at := time.Date(2026, 12, 24, 10, 0, 0, 0, time.UTC)
	if got := now(); got.Before(at) || got.After(at.Add(time.Minute)) {
		t.Errorf("now() = %v, want %v and on", got, at)
	}
}
