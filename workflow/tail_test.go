package workflow

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal"
)

// tear appends the first bytes of a frame to the journal, as a crash in
// the middle of an append leaves it.
func tear(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	torn := append(data, journal.EncodeFrame([]byte(`{"type":"done"}`))[:9]...)
	if err := os.WriteFile(path, torn, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A refusal changes nothing, a torn tail included: no cut, no copy (the
// refusal used to cut the tail and keep a .broken copy first).
func TestRefusalLeavesTornTail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(f *fixture) *Runner
		want  error
	}{
		{"inspect step", func(f *fixture) *Runner {
			interruptedAt(t, f, "third")
			return f.runner()
		}, errRefused},
		{"verify unknown", func(f *fixture) *Runner {
			interruptedAt(t, f, "second")
			f.steps["second"].outcome = Unknown
			return f.runner()
		}, errRefused},
		{"binding", func(f *fixture) *Runner {
			interruptedAt(t, f, "second")
			r := f.runner()
			r.Binding.InstallationID = "id-2"
			return r
		}, errBindingMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			r := tc.setup(f)
			tear(t, f.path)
			before, _ := os.ReadFile(f.path)
			if _, err := r.Run(context.Background()); !errors.Is(err, tc.want) {
				t.Fatalf("want %v, got %v", tc.want, err)
			}
			if after, _ := os.ReadFile(f.path); !bytes.Equal(before, after) {
				t.Error("the refusal changed the journal")
			}
			if _, err := os.Lstat(f.path + journal.BrokenSuffix); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the refusal kept a copy: %v", err)
			}
			rep, err := InspectJournal(f.path, lookupTest)
			if err != nil || rep.TornTail == nil || rep.LastCut != nil {
				t.Fatalf("status: %v %+v", err, rep)
			}
		})
	}
}

// A run that writes cuts the torn tail first and reports the cut; status
// shows it afterwards from the one copy kept, however many cuts there were.
func TestTornTailCutIsReported(t *testing.T) {
	f := newFixture(t)
	f.steps["fourth"].err = errors.New("down")
	if _, err := f.runner().Run(context.Background()); err == nil {
		t.Fatal("want fourth's failure")
	}
	var last *journal.Tail
	for i := range 3 {
		tear(t, f.path)
		rep, err := InspectJournal(f.path, lookupTest)
		if err != nil || rep.TornTail == nil || rep.TornTail.Copy != "" {
			t.Fatalf("status before the rerun: %v %+v", err, rep)
		}
		rep, err = f.runner().Run(context.Background())
		if err == nil {
			t.Fatal("want fourth's failure")
		}
		if rep.LastCut == nil || rep.LastCut.Copy != f.path+journal.BrokenSuffix || rep.TornTail != nil {
			t.Fatalf("run %d: report %+v", i, rep)
		}
		last = rep.LastCut
	}
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil || rep.LastCut == nil || *rep.LastCut != *last || rep.TornTail != nil || rep.Condition != Failed {
		t.Fatalf("status: %v %+v", err, rep)
	}
	copies, _ := filepath.Glob(f.path + journal.BrokenSuffix + "*")
	if len(copies) != 1 {
		t.Errorf("copies kept: %v", copies)
	}
	f.steps["fourth"].err = nil
	if rep, err := f.runner().Run(context.Background()); err != nil || rep.Condition != Complete {
		t.Fatalf("final run: %v %+v", err, rep)
	}
}
