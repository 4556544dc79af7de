package prompt

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

func TestAsk(t *testing.T) {
	for _, tt := range []struct {
		answer string
		ok     bool
	}{{"y\n", true}, {"YES\n", true}, {"n\n", false}, {"\n", false}, {"", false}, {"yep\n", false}} {
		var out bytes.Buffer
		err := (&Asker{In: strings.NewReader(tt.answer), Out: &out}).Ask(context.Background(), "Apply to protected group production (prod-eu, prod-us)?")
		if (err == nil) != tt.ok {
			t.Errorf("answer %q: err %v", tt.answer, err)
		}
		if out.String() != "Apply to protected group production (prod-eu, prod-us)? [y/N] " {
			t.Errorf("question %q", out.String())
		}
	}
}

// TestAskInterrupted: Ctrl-C at the question refuses at once, though no
// answer ever comes.
func TestAskInterrupted(t *testing.T) {
	never, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- (&Asker{In: never, Out: &out}).Ask(ctx, "Apply?") }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("err %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("ask still waits for an answer after Ctrl-C")
	}
}
