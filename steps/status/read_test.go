package status

import (
	"bytes"
	"strings"
	"testing"
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
