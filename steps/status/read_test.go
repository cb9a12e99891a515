package status

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
)

// A child that floods its output reaches the operator's terminal with its
// first maxChildOutput bytes and one note; the rest is dropped, and every
// write succeeds, so that the child's relay never blocks or fails.
func TestAFloodOfTheChildsOutputIsCut(t *testing.T) {
	var got bytes.Buffer
	w := &cappedWriter{w: &got, left: maxChildOutput}
	line := []byte(strings.Repeat("x", 1000) + "\n")
	for range 10 * maxChildOutput / len(line) {
		if n, err := w.Write(line); n != len(line) || err != nil {
			t.Fatalf("write: %d, %v", n, err)
		}
	}
	note := "\n(the rest of what the oac-node process printed is left out)\n"
	if got.Len() != maxChildOutput+len(note) || !strings.HasSuffix(got.String(), note) {
		t.Fatalf("passed on %d bytes ending %q, want %d and the note", got.Len(), got.String()[max(0, got.Len()-80):], maxChildOutput)
	}
}

// A child the kernel does not let go (a read on a dead mount sleeps
// uninterruptibly, and SIGKILL waits for it) is given up abandonDelay
// after the deadline: the inspection ends interrupted, at once.
func TestAChildThatDoesNotGoIsGivenUp(t *testing.T) {
	old := runChild
	t.Cleanup(func() { runChild = old })
	stuck := make(chan struct{})
	defer close(stuck)
	runChild = func(context.Context, privsep.Options) (privsep.Result, error) {
		<-stuck
		return privsep.Result{}, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := runBounded(ctx, privsep.Options{})
	took := time.Since(start)
	if !errors.Is(err, privsep.ErrInterrupted) {
		t.Fatalf("err %v, want privsep.ErrInterrupted", err)
	}
	if took < abandonDelay || took > abandonDelay+time.Second {
		t.Fatalf("given up after %v, want %v after the deadline", took, abandonDelay)
	}
}
