package workflow

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
)

// otherTestDef is testDef as another installer version defines it: its
// second state is renamed, so the journal's records name a state this
// definition does not have.
func otherTestDef() *Definition {
	d := testDef()
	d.States[0].On[0].To = "second_b"
	d.States[1].Name = "second_b"
	return d
}

// A journal written by another definition is refused by its header, with a
// BindingError naming the differing fields, before any record after the
// header is replayed (it was a replay error: "unknown state").
func TestOtherDefinitionIsABindingError(t *testing.T) {
	f := newFixture(t)
	interruptedAt(t, f, "third")
	before, _ := os.ReadFile(f.path)

	r := f.runner()
	r.Def = otherTestDef()
	r.Steps["second_b"] = r.Steps["second"]
	_, err := r.Run(context.Background())
	var be *BindingError
	if !errors.As(err, &be) || !errors.Is(err, errBindingMismatch) || errors.Is(err, errRefused) {
		t.Fatalf("want a BindingError, got %v", err)
	}
	if len(be.Differences) != 1 || !strings.HasPrefix(be.Differences[0], "definition hash:") {
		t.Fatalf("differences %q, want the definition hash alone", be.Differences)
	}
	if after, _ := os.ReadFile(f.path); !bytes.Equal(before, after) {
		t.Error("the refusal changed the journal")
	}

	rep, err := InspectJournal(f.path, func(string) (*Definition, bool) { return otherTestDef(), true })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Condition != NeedsInspection || rep.BindingMismatch == nil || len(rep.BindingMismatch.Differences) != 1 ||
		!strings.HasPrefix(rep.BindingMismatch.Differences[0], "definition hash:") {
		t.Fatalf("inspection %+v", rep)
	}
	if !strings.Contains(rep.Note, "definition hash") || strings.Contains(rep.Note, "replay") {
		t.Errorf("note %q", rep.Note)
	}
}
