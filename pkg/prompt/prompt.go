// Package prompt asks before a write: a yes/no question on a terminal,
// and a refusal, before anything is written, where there is no terminal
// to ask on.
package prompt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"

	"github.com/kubectl-fleet/kubectl-fleet/pkg/fleet"
	"github.com/kubectl-fleet/kubectl-fleet/pkg/rollout"
)

// ErrNotConfirmed is a question answered no (or not answered: Ctrl-C).
var ErrNotConfirmed = errors.New("not confirmed")

// Asker asks on Out and reads the answers from In, one line each.
type Asker struct {
	In  io.Reader
	Out io.Writer

	in *bufio.Reader
}

// Terminal reports whether In is a terminal: whether anyone can answer.
func (a *Asker) Terminal() bool {
	f, ok := a.In.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Confirm asks "Verb what?" ("Delete app web from prod-eu?"); without a
// terminal it refuses: "delete app web …: pass --yes to delete without a
// terminal to confirm on".
func (a *Asker) Confirm(ctx context.Context, verb, what string) error {
	if !a.Terminal() {
		v := strings.ToLower(verb)
		return fmt.Errorf("%s %s: pass --yes to %s without a terminal to confirm on", v, what, v)
	}
	return a.Ask(ctx, verb+" "+what+"?")
}

// Ask puts a yes/no question on Out and reads the answer; anything but y
// or yes is a refusal, and so is Ctrl-C (ctx done) while it waits.
func (a *Asker) Ask(ctx context.Context, question string) error {
	if a.in == nil {
		a.in = bufio.NewReader(a.In)
	}
	fmt.Fprintf(a.Out, "%s [y/N] ", question)
	answer := make(chan string, 1)
	go func() {
		line, _ := a.in.ReadString('\n')
		answer <- line
	}()
	select {
	case <-ctx.Done():
		fmt.Fprintln(a.Out)
		return fmt.Errorf("%w: interrupted", ErrNotConfirmed)
	case line := <-answer:
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
			return nil
		}
	}
	return ErrNotConfirmed
}

// Protected is how a rollout of clusters asks before writing to a
// protected group (rollout.Options.Confirm; verb: "Apply to"): a
// question per group on a terminal, and without one a refusal before
// anything is written.
func (a *Asker) Protected(ctx context.Context, f *fleet.Fleet, clusters []*fleet.Cluster, verb string) (func(group string, clusters []string) error, error) {
	if g, protected := rollout.FirstProtected(f, rollout.Waves(f, clusters)); g != "" && !a.Terminal() {
		return nil, fmt.Errorf("group %s is protected (%s): pass --yes to write to it without a terminal to confirm on", g, strings.Join(protected, ", "))
	}
	return func(group string, clusters []string) error {
		return a.Ask(ctx, fmt.Sprintf("%s protected group %s (%s)?", verb, group, strings.Join(clusters, ", ")))
	}, nil
}
