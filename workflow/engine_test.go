package workflow

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// testDef is a small workflow with one state of each policy and a branch.
func testDef() *Definition {
	return &Definition{
		Name:  "test",
		Final: "finished",
		States: []StateDef{
			{Name: "first", Policy: Rerun, On: []Transition{{"first_done", "second"}, {"skip", "fourth"}}},
			{Name: "second", Policy: Verify, On: []Transition{{"second_done", "third"}}},
			{Name: "third", Policy: Inspect, On: []Transition{{"third_done", "fourth"}}},
			{Name: "fourth", Policy: Rerun, On: []Transition{{"fourth_done", "finished"}}},
		},
	}
}

// fakeStep counts calls and returns canned results.
type fakeStep struct {
	runs, verifies int
	res            Result
	err            error
	outcome        Outcome
	sawFacts       Facts
	// during, when set, runs inside Run and gives its error.
	during func(ctx context.Context) error
}

func (s *fakeStep) Run(ctx context.Context, f Facts) (Result, error) {
	s.runs++
	s.sawFacts = f
	if s.during != nil {
		return s.res, s.during(ctx)
	}
	return s.res, s.err
}

func (s *fakeStep) Verify(_ context.Context, f Facts) (Outcome, Result, error) {
	s.verifies++
	return s.outcome, s.res, nil
}

type fixture struct {
	steps map[string]*fakeStep
	path  string
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{steps: map[string]*fakeStep{}, path: filepath.Join(t.TempDir(), "test.journal")}
	for _, n := range []string{"first", "second", "third", "fourth"} {
		f.steps[n] = &fakeStep{res: Result{Facts: map[string]string{n: "yes"}}}
	}
	return f
}

func (f *fixture) runner() *Runner {
	steps := map[State]Step{}
	for n, s := range f.steps {
		steps[State(n)] = s
	}
	return &Runner{Def: testDef(), Steps: steps, Journal: f.path, Binding: Binding{Version: "v1", InstallationID: "id-1"}}
}

func TestRunToCompletion(t *testing.T) {
	f := newFixture(t)
	rep, err := f.runner().Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Condition != Complete || rep.State != "finished" || len(rep.Completed) != 4 || rep.Run != RunFresh {
		t.Fatalf("report: %+v", rep)
	}
	if got := f.steps["fourth"].sawFacts; got["first"] != "yes" || got["third"] != "yes" {
		t.Errorf("facts not passed on: %v", got)
	}
	// A rerun of a complete journal runs nothing.
	rep, err = f.runner().Run(context.Background())
	if err != nil || rep.Condition != Complete || rep.Run != RunConverged {
		t.Fatalf("rerun: %v %+v", err, rep)
	}
	if ir, err := InspectJournal(f.path, lookupTest); err != nil || ir.Run != "" {
		t.Errorf("a report read from the journal says how a run went: %+v %v", ir, err)
	}
	for n, s := range f.steps {
		if s.runs != 1 {
			t.Errorf("step %s ran %d times", n, s.runs)
		}
	}
}

func TestBranchEvent(t *testing.T) {
	f := newFixture(t)
	f.steps["first"].res.Event = "skip"
	rep, err := f.runner().Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f.steps["second"].runs != 0 || f.steps["third"].runs != 0 || f.steps["fourth"].runs != 1 || rep.Condition != Complete {
		t.Fatalf("branch not taken: %+v", rep)
	}
}

func TestUnknownEventFails(t *testing.T) {
	f := newFixture(t)
	f.steps["first"].res.Event = "nonsense"
	_, err := f.runner().Run(context.Background())
	var se *StepError
	if !errors.As(err, &se) || se.Step != "first" {
		t.Fatalf("want StepError for first, got %v", err)
	}
}

// interruptedAt writes a journal whose run was interrupted inside step.
func interruptedAt(t *testing.T, f *fixture, step string) []byte {
	t.Helper()
	// Run up to the step, failing it, then rewrite the journal without the
	// fail record: what a SIGKILL between begin and done leaves.
	f.steps[step].err = errors.New("boom")
	if _, err := f.runner().Run(context.Background()); err == nil {
		t.Fatal("want failure")
	}
	recs, _, err := journal.Scan(f.path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for _, r := range recs[:len(recs)-1] {
		buf.Write(journal.EncodeFrame(r))
	}
	if err := os.WriteFile(f.path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	f.steps[step].err = nil
	for _, s := range f.steps {
		s.runs, s.verifies = 0, 0
	}
	return buf.Bytes()
}

func TestResumePolicies(t *testing.T) {
	tests := []struct {
		name      string
		step      string
		outcome   Outcome
		wantRuns  int
		wantVerif int
		refused   bool
	}{
		{"rerun runs again", "first", 0, 1, 0, false},
		{"verify done records without running", "second", Done, 0, 1, false},
		{"verify not done runs", "second", NotDone, 1, 1, false},
		{"verify unknown refuses", "second", Unknown, 0, 1, true},
		{"inspect refuses", "third", 0, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			before := interruptedAt(t, f, tc.step)
			f.steps[tc.step].outcome = tc.outcome
			rep, err := f.runner().Run(context.Background())
			s := f.steps[tc.step]
			if s.runs != tc.wantRuns || s.verifies != tc.wantVerif {
				t.Errorf("runs %d verifies %d, want %d %d", s.runs, s.verifies, tc.wantRuns, tc.wantVerif)
			}
			if tc.refused {
				var re *RefusedError
				if !errors.As(err, &re) || !errors.Is(err, errRefused) || re.Step != tc.step {
					t.Fatalf("want refusal naming %s, got %v", tc.step, err)
				}
				after, _ := os.ReadFile(f.path)
				if !bytes.Equal(before, after) {
					t.Error("a refusal changed the journal")
				}
				ir, err := InspectJournal(f.path, lookupTest)
				if err != nil || (tc.step == "third" && ir.Condition != NeedsInspection) {
					t.Errorf("inspect: %v %+v", err, ir)
				}
				return
			}
			if err != nil || rep.Condition != Complete || rep.Run != RunResumed {
				t.Fatalf("resume: %v %+v", err, rep)
			}
			if tc.outcome == Done {
				if !rep.Completed[1].Verified {
					t.Error("verified completion not recorded as verified")
				}
			}
			if rep.Attempts[tc.step] != 2 && tc.outcome != Done {
				t.Errorf("attempts %d, want 2", rep.Attempts[tc.step])
			}
		})
	}
}

func lookupTest(name string) (*Definition, bool) {
	if name == "test" {
		return testDef(), true
	}
	return nil, false
}

func TestFailureIsRecordedAndRetried(t *testing.T) {
	f := newFixture(t)
	f.steps["fourth"].err = classed{errors.New("network down")}
	_, err := f.runner().Run(context.Background())
	var se *StepError
	if !errors.As(err, &se) || se.Class != "transfer" || se.Step != "fourth" {
		t.Fatalf("got %v", err)
	}
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Condition != Failed || rep.LastError == nil || rep.LastError.Class != "transfer" || rep.State != "fourth" {
		t.Fatalf("report %+v", rep)
	}
	f.steps["fourth"].err = nil
	rep, err = f.runner().Run(context.Background())
	if err != nil || rep.Condition != Complete || rep.Attempts["fourth"] != 2 {
		t.Fatalf("retry: %v %+v", err, rep)
	}
}

type classed struct{ error }

func (classed) Class() string { return "transfer" }

func TestUnchangedFailureOfInspectStepIsRetried(t *testing.T) {
	f := newFixture(t)
	f.steps["third"].err = Unchanged(errors.New("refused before any change"))
	if _, err := f.runner().Run(context.Background()); err == nil {
		t.Fatal("want failure")
	}
	f.steps["third"].err = nil
	rep, err := f.runner().Run(context.Background())
	if err != nil || rep.Condition != Complete {
		t.Fatalf("an unchanged failure must not need inspection: %v", err)
	}
}

func TestFailedInspectStepRefuses(t *testing.T) {
	f := newFixture(t)
	f.steps["third"].err = errors.New("lease created, identity not written")
	if _, err := f.runner().Run(context.Background()); err == nil {
		t.Fatal("want failure")
	}
	f.steps["third"].err = nil
	if _, err := f.runner().Run(context.Background()); !errors.Is(err, errRefused) {
		t.Fatalf("want refusal, got %v", err)
	}
}

func TestBindingMismatch(t *testing.T) {
	f := newFixture(t)
	interruptedAt(t, f, "first")
	r := f.runner()
	r.Binding.Version = "v2"
	r.Binding.Generation = 3
	_, err := r.Run(context.Background())
	var be *BindingError
	if !errors.As(err, &be) || !errors.Is(err, errBindingMismatch) || len(be.Differences) != 2 {
		t.Fatalf("got %v", err)
	}
	if f.steps["first"].runs != 0 {
		t.Error("a step ran despite the mismatch")
	}
}

func TestLockedInstanceRefuses(t *testing.T) {
	f := newFixture(t)
	l, err := safefile.TryLock(f.path+".lock", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	if _, err := f.runner().Run(context.Background()); !errors.Is(err, ErrLocked) {
		t.Fatalf("want ErrLocked, got %v", err)
	}
}

func TestCancelledContextIsRecordedAsInterrupted(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := f.runner().Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want the cancellation, got %v", err)
	}
	// The first step never begins under a cancelled context: the journal
	// holds the header and nothing else, and a rerun starts at the first
	// step.
	if f.steps["first"].runs != 0 {
		t.Fatal("a step began after cancellation")
	}
	if recs := journalRecords(t, f.path); len(recs) != 1 || recs[0].Type != RecordHeader {
		t.Fatalf("recorded %+v, want the header only", recs)
	}
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil || rep.Condition != Resumable || rep.State != "first" || rep.Pending != nil || len(rep.Completed) != 0 {
		t.Fatalf("status %v %+v", err, rep)
	}

	// Cancelled while the second step runs: its begin and an interrupted
	// failure are recorded, nothing after it.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	f.steps["second"].during = func(ctx context.Context) error {
		cancel()
		return ctx.Err()
	}
	if _, err := f.runner().Run(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("want the cancellation, got %v", err)
	}
	var got []string
	for _, r := range journalRecords(t, f.path) {
		got = append(got, string(r.Type)+" "+r.Step+" "+r.Class)
	}
	want := []string{"header  ", "begin first ", "done first ", "begin second ", "fail second interrupted"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("recorded\n%q\nwant\n%q", got, want)
	}
	if f.steps["third"].runs != 0 {
		t.Error("a step ran after the cancellation")
	}
}

// TestReplayEarlierJournal replays a journal committed from an earlier run
// of the engine: the record format is a compatibility promise.
func TestReplayEarlierJournal(t *testing.T) {
	golden := filepath.Join("testdata", "interrupted-verify.journal")
	if os.Getenv("OAC_UPDATE_GOLDEN") != "" {
		f := newFixture(t)
		f.runner().Now = func() time.Time { return time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) }
		interruptedAt(t, f, "second")
		data, _ := os.ReadFile(f.path)
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "test.journal")
	os.WriteFile(path, data, 0o600)
	rep, err := InspectJournal(path, lookupTest)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Condition != Resumable || rep.Pending == nil || rep.Pending.Step != "second" || rep.Policy != "verify" || len(rep.Completed) != 1 {
		t.Fatalf("report %+v", rep)
	}
	f := &fixture{steps: newFixture(t).steps, path: path}
	f.steps["second"].outcome = Done
	rep, err = f.runner().Run(context.Background())
	if err != nil || rep.Condition != Complete || f.steps["first"].runs != 0 || f.steps["second"].runs != 0 {
		t.Fatalf("resume of earlier journal: %v %+v", err, rep)
	}
}

func TestTornTailIsCutOnResume(t *testing.T) {
	f := newFixture(t)
	interruptedAt(t, f, "first")
	data, _ := os.ReadFile(f.path)
	// A crash in the middle of the next append.
	torn := append(data, journal.EncodeFrame([]byte(`{"type":"done"}`))[:9]...)
	os.WriteFile(f.path, torn, 0o600)
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil || rep.Condition != Resumable {
		t.Fatalf("%v %+v", err, rep)
	}
	if _, err := f.runner().Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.path + journal.BrokenSuffix); err != nil {
		t.Errorf("no copy of the torn journal kept: %v", err)
	}
}

func TestCorruptJournalRefusesAndIsReported(t *testing.T) {
	f := newFixture(t)
	interruptedAt(t, f, "third")
	data, _ := os.ReadFile(f.path)
	data[20] ^= 0xff // inside the header record
	os.WriteFile(f.path, data, 0o600)
	if _, err := f.runner().Run(context.Background()); !errors.Is(err, journal.ErrCorrupt) {
		t.Fatalf("want corruption, got %v", err)
	}
	rep, err := InspectJournal(f.path, lookupTest)
	if err != nil || rep.Condition != NeedsInspection {
		t.Fatalf("%v %+v", err, rep)
	}
}
