package workflow

import (
	"context"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
)

// A run that fails after it wrote reports, in a *RunError, what it
// changed: the journal and its lock file created, the steps it completed,
// the step that failed and whether that step changed anything.
func TestRunReportsWhatItChanged(t *testing.T) {
	for _, tc := range []struct {
		name          string
		err           error
		unchanged     bool
		wantFailPhase bool
	}{
		{"a refusal that changed nothing", Unchanged(Refusef("the thing is not ours")), true, false},
		{"a failure part way", errors.New("disk full"), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.steps["second"].err = tc.err
			_, err := f.runner().Run(context.Background())
			var re *RunError
			if !errors.As(err, &re) {
				t.Fatalf("%T %v: want a *RunError", err, err)
			}
			var se *StepError
			if !errors.As(err, &se) || se.Step != "second" || err.Error() != se.Error() {
				t.Errorf("the step's failure is not the run's: %v", err)
			}
			want := RunError{Err: re.Err, Workflow: "test", Journal: f.path, LockCreated: true, JournalCreated: true, Appended: true,
				Completed: []string{"first"}, Failed: "second", FailedUnchanged: tc.unchanged}
			if !reflect.DeepEqual(*re, want) {
				t.Errorf("got %+v, want %+v", *re, want)
			}
			changes := strings.Join(re.Changes(), "; ")
			if !strings.Contains(changes, "the test journal "+f.path+" and its lock file (created)") ||
				!strings.Contains(changes, "the steps completed in this run: first") ||
				strings.Contains(changes, "the step second did") != tc.wantFailPhase {
				t.Errorf("changes: %s", changes)
			}
		})
	}
}

// A run of an existing journal adds records; one that refuses before its
// first write changed nothing and is no *RunError, unless it created the
// instance lock file (removed by someone in between).
func TestRunReportsAResumedRunsChanges(t *testing.T) {
	f := newFixture(t)
	f.steps["second"].err = errors.New("disk full")
	if _, err := f.runner().Run(context.Background()); err == nil {
		t.Fatal("the first run did not fail")
	}
	f.steps["second"].err, f.steps["second"].outcome = nil, NotDone
	f.steps["third"].during = func(context.Context) error { return errors.New("interrupted part way") }
	_, err := f.runner().Run(context.Background())
	var re *RunError
	if !errors.As(err, &re) || re.JournalCreated || re.LockCreated || !re.Appended ||
		!reflect.DeepEqual(re.Completed, []string{"second"}) || re.Failed != "third" {
		t.Fatalf("%+v", re)
	}
	if c := strings.Join(re.Changes(), "; "); !strings.Contains(c, "(records added)") {
		t.Errorf("changes: %s", c)
	}
	// The third step (Inspect) failed part way: the next run refuses
	// before it writes.
	before, _ := os.ReadFile(f.path)
	_, err = f.runner().Run(context.Background())
	var refused *RefusedError
	if !errors.As(err, &refused) || errors.As(err, &re) {
		t.Fatalf("%T %v: want a refusal that wrote nothing", err, err)
	}
	if after, _ := os.ReadFile(f.path); string(after) != string(before) {
		t.Error("the refusal wrote")
	}
	if err := os.Remove(f.path + ".lock"); err != nil {
		t.Fatal(err)
	}
	_, err = f.runner().Run(context.Background())
	if !errors.As(err, &refused) || !errors.As(err, &re) || !re.LockCreated || re.Appended {
		t.Fatalf("%T %v: want a refusal reporting the lock file it created", err, err)
	}
}

// Message says "Nothing was changed." once, for a refusal and only when no
// change came before it.
func TestMessage(t *testing.T) {
	ref := &Refusal{Err: errors.New("the account oac-node has uid 0"), Hint: "Remove that account."}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"refusal", ref, "the account oac-node has uid 0. Remove that account. Nothing was changed."},
		{"wrapped refusal", Unchanged(Refuse(ref)), "the account oac-node has uid 0. Remove that account. Nothing was changed."},
		{"formatted refusal", Refusef("no record of %s", "x"), "no record of x. Nothing was changed."},
		{"failure", errors.New("disk full"), "disk full"},
		{"refusal after a change", AfterChanges(ref, []string{"the account (created)"}, "Rerun it."),
			"the account oac-node has uid 0. Remove that account. Changed before the failure: the account (created). Rerun it."},
		{"nothing changed before", AfterChanges(ref, nil, "Rerun it."), "the account oac-node has uid 0. Remove that account. Nothing was changed."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Message(tc.err); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
	if Refuse(nil) != nil || AfterChanges(nil, []string{"x"}, "") != nil {
		t.Error("nil is not kept")
	}
	if r := Refuse(ref); r != error(ref) {
		t.Error("a refusal is wrapped again")
	}
}
