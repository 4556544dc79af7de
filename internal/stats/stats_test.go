package stats

import (
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestStartWritesPeak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stats.json")
	t.Setenv(Env, path)
	stop := Start()
	var wg sync.WaitGroup
	release := make(chan struct{})
	for range 50 {
		wg.Go(func() { <-release })
	}
	time.Sleep(4 * Interval)
	close(release)
	wg.Wait()
	stop()
	f, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS == "linux" && f.PeakRSS <= 0 {
		t.Errorf("figures %+v: no peak RSS", f)
	}
	if f.PeakGoroutines < 50 || f.Samples < 2 {
		t.Errorf("figures %+v: want a peak of at least 50 goroutines over several samples", f)
	}
}

func TestStartWithoutEnvIsANoOp(t *testing.T) {
	t.Setenv(Env, "")
	Start()()
}
