package workflow

import (
	"bytes"
	"context"
	"errors"
	"os"
	"testing"

	"github.com/openagentcore/oac-node-install/journal"
)

// journalRecords decodes every record of the journal at path.
func journalRecords(t *testing.T, path string) []Record {
	t.Helper()
	raw, tail, err := journal.Scan(path)
	if err != nil || tail != nil {
		t.Fatalf("scan %s: %v (tail %v)", path, err, tail)
	}
	recs := make([]Record, len(raw))
	for i, b := range raw {
		if recs[i], err = decodeRecord(b); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// assertCompleteAndStill checks that the journal replays as complete, and
// that a further run of the same command runs nothing and writes nothing.
func assertCompleteAndStill(t *testing.T, f *fixture) {
	t.Helper()
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil || rep.Condition != Complete {
		t.Fatalf("status after completion: %v %+v", err, rep)
	}
	before, _ := os.ReadFile(f.path)
	runs := map[string]int{}
	for n, s := range f.steps {
		runs[n] = s.runs + s.verifies
	}
	rep, err = f.runner().Run(context.Background())
	if err != nil || rep.Condition != Complete {
		t.Fatalf("another run after completion: %v %+v", err, rep)
	}
	if after, _ := os.ReadFile(f.path); !bytes.Equal(before, after) {
		t.Error("a run after completion wrote to the journal")
	}
	for n, s := range f.steps {
		if s.runs+s.verifies != runs[n] {
			t.Errorf("a run after completion ran or verified step %s", n)
		}
	}
}

// A Verify step that recorded a failure (not Unchanged) and that its
// Verify finds done on the rerun: the rerun records a verified done
// without a new begin, and that journal must replay (it did not: replay
// refused "done without a begin", status said needs-inspection and a third
// run refused).
func TestVerifyStepFailedThenVerifiedDone(t *testing.T) {
	f := newFixture(t)
	f.steps["second"].err = errors.New("load image: connection reset")
	if _, err := f.runner().Run(context.Background()); err == nil {
		t.Fatal("want the step's failure")
	}
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil || rep.Condition != Failed || rep.Pending == nil || !rep.Pending.Failed {
		t.Fatalf("status after the failure: %v %+v", err, rep)
	}
	f.steps["second"].err = nil
	f.steps["second"].outcome = Done
	rep, err = f.runner().Run(context.Background())
	if err != nil || rep.Condition != Complete {
		t.Fatalf("rerun: %v %+v", err, rep)
	}
	if s := f.steps["second"]; s.runs != 1 || s.verifies != 1 {
		t.Errorf("second: %d runs, %d verifies; want 1, 1", s.runs, s.verifies)
	}
	if !rep.Completed[1].Verified || rep.Attempts["second"] != 1 {
		t.Errorf("completed %+v attempts %v", rep.Completed[1], rep.Attempts)
	}
	assertCompleteAndStill(t, f)
}

// Ctrl-C while a Verify step runs: the step returns the context's error,
// the engine records an interrupted failure, and a rerun resolves the step
// by its Verify, done or not done; the journal replays in both cases.
func TestCancelDuringVerifyStepThenRerun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		outcome  Outcome
		wantRuns int
	}{
		{"verified done", Done, 1},
		{"not done, run again", NotDone, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.steps["second"].during = func(ctx context.Context) error {
				cancel() // the operator's Ctrl-C, while the step works
				<-ctx.Done()
				return ctx.Err()
			}
			_, err := f.runner().Run(ctx)
			var se *StepError
			if !errors.As(err, &se) || se.Step != "second" || se.Class != "interrupted" || !errors.Is(err, context.Canceled) {
				t.Fatalf("want the interrupted step's error, got %v", err)
			}
			recs := journalRecords(t, f.path)
			last := recs[len(recs)-1]
			if last.Type != RecordFail || last.Step != "second" || last.Class != "interrupted" || last.Unchanged {
				t.Fatalf("last record %+v, want second's interrupted failure", last)
			}
			f.steps["second"].during = nil
			f.steps["second"].outcome = tc.outcome
			rep, err := f.runner().Run(context.Background())
			if err != nil || rep.Condition != Complete {
				t.Fatalf("rerun: %v %+v", err, rep)
			}
			if s := f.steps["second"]; s.runs != tc.wantRuns || s.verifies != 1 {
				t.Errorf("second: %d runs, %d verifies; want %d, 1", s.runs, s.verifies, tc.wantRuns)
			}
			assertCompleteAndStill(t, f)
		})
	}
}

// The engine writes only records that replay: a step whose Verify reports
// done with an event its state does not have is a recorded failure, and
// the journal still replays.
func TestVerifiedDoneWithUnknownEventIsRecordedFailure(t *testing.T) {
	f := newFixture(t)
	interruptedAt(t, f, "second")
	f.steps["second"].outcome = Done
	f.steps["second"].res.Event = "nonsense"
	_, err := f.runner().Run(context.Background())
	var se *StepError
	if !errors.As(err, &se) || se.Step != "second" {
		t.Fatalf("got %v", err)
	}
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil || rep.Condition != Failed || rep.LastError == nil || rep.LastError.Step != "second" {
		t.Fatalf("status: %v %+v", err, rep)
	}
}
