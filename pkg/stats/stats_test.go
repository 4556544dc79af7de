package stats

import (
	"os"
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

func TestHeapProfileAtPeak(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(Env, filepath.Join(dir, "stats.json"))
	t.Setenv(HeapEnv, filepath.Join(dir, "heap"))
	stop := Start()
	held := make([][]byte, 0, 64)
	for range 64 {
		held = append(held, make([]byte, 1<<20))
		runtime.GC()
		time.Sleep(Interval / 2)
	}
	stop()
	runtime.KeepAlive(held)
	f, err := Read(filepath.Join(dir, "stats.json"))
	if err != nil {
		t.Fatal(err)
	}
	if f.PeakHeap < 64<<20 || f.PeakStacks == 0 {
		t.Errorf("figures %+v: want a heap peak of at least the 64 MiB held, and some stacks", f)
	}
	info, err := os.Stat(filepath.Join(dir, "heap"))
	if err != nil {
		t.Fatalf("no heap profile: %v", err)
	}
	if info.Size() == 0 {
		t.Error("empty heap profile")
	}
}
