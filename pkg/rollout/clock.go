package rollout

import (
	"fmt"
	"os"
	"time"
)

// nowEnv, set to an RFC 3339 time, is the clock deploy windows are read
// on instead of the machine's: for rehearsing a rollout at another time,
// and for tests.
const nowEnv = "KUBECTL_FLEET_NOW"

// EnvClock is the clock deploy windows are read on (Options.Now):
// $KUBECTL_FLEET_NOW, running on from the time of this call; nil, the
// machine's clock, when it is not set or, with an error that says so,
// not a time.
func EnvClock() (func() time.Time, error) {
	v := os.Getenv(nowEnv)
	if v == "" {
		return nil, nil
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("$%s %q: want an RFC 3339 time such as 2026-12-24T10:00:00Z", nowEnv, v)
	}
	start := time.Now()
	return func() time.Time { return at.Add(time.Since(start)) }, nil
}
