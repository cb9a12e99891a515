package workflow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Facts are the output facts of the steps completed so far, replayed from
// the journal. Steps read them; they never see the command's own structs.
type Facts map[string]string

// Result is what a step reports when it succeeds: the event to fire (empty
// for the state's first transition) and its output facts, which the done
// record makes durable.
type Result struct {
	Event Event
	Facts map[string]string
}

// Step is the work done in one state. Run must check before it acts where
// its policy is Rerun, and must return a context error promptly when ctx is
// cancelled.
type Step interface {
	Run(ctx context.Context, facts Facts) (Result, error)
}

// Outcome is a Verifier's judgement of an interrupted step.
type Outcome int

const (
	// NotDone: the step's effect is absent; run the step.
	NotDone Outcome = iota + 1
	// Done: the effect is complete; the Result is recorded as the step's.
	Done
	// Unknown: the host does not tell; the engine refuses.
	Unknown
)

// Verifier is implemented by the steps of Verify states.
type Verifier interface {
	Verify(ctx context.Context, facts Facts) (Outcome, Result, error)
}

// StepFunc adapts a function to Step.
type StepFunc func(ctx context.Context, facts Facts) (Result, error)

// Run calls f.
func (f StepFunc) Run(ctx context.Context, facts Facts) (Result, error) { return f(ctx, facts) }

// Phase is what the engine just did with a step, as Progress tells it. The
// values are the words logs show.
type Phase string

const (
	// PhaseBegin: the begin record is durable and the step runs.
	PhaseBegin Phase = "begin"
	// PhaseDone: the step succeeded and its done record is durable.
	PhaseDone Phase = "done"
	// PhaseVerified: an interrupted step's Verify found its effect
	// complete, and its done record is durable.
	PhaseVerified Phase = "verified"
	// PhaseResumed: an interrupted step runs again (its policy is Rerun,
	// or its Verify found the effect absent); PhaseBegin follows.
	PhaseResumed Phase = "resumed"
	// PhaseFail: the step failed and its fail record is written.
	PhaseFail Phase = "fail"
)

// Progress tells an observer what the engine is doing.
type Progress struct {
	Workflow string
	State    State
	Step     string
	Doc      string
	Phase    Phase
	Err      error
}

// Runner runs one workflow instance against its journal.
type Runner struct {
	Def *Definition
	// Steps holds the step of every state, by the state it runs in.
	Steps map[State]Step
	// Binding identifies the instance; Workflow and Definition are filled
	// from Def.
	Binding Binding
	// Journal is the instance's journal file; its lock is Journal+".lock".
	Journal string
	// Observe, when set, is told about every step as it begins and ends.
	Observe func(Progress)
	// Now is the clock for records (time.Now by default).
	Now func() time.Time
}

// Run replays the journal, resolves an interrupted step by its policy, and
// runs the remaining steps until the final state. A journal whose run already
// ended is left alone and returns its report. Every refusal comes before the
// first write: a torn tail is cut (and reported in Report.LastCut) only once
// the run goes ahead. Errors: *RefusedError (resume refused, nothing
// changed), *BindingError (nothing changed), ErrLocked, journal corruption
// (journal.ErrCorrupt), safefile.ErrLockReplaced (the instance lock file was
// replaced during the run; nothing more written), or *StepError for a
// failed step (recorded). An error that comes after the run changed
// something on disk (created the lock file or the journal, wrote a record)
// is wrapped in a *RunError saying what it changed.
func (r *Runner) Run(ctx context.Context) (rep *Report, err error) {
	def := r.Def
	if err := def.Validate(); err != nil {
		return nil, err
	}
	for _, sd := range def.States {
		st, ok := r.Steps[sd.Name]
		if !ok {
			return nil, fmt.Errorf("workflow %s: no implementation bound for step %q", def.Name, sd.Name)
		}
		if _, ok := st.(Verifier); sd.Policy == Verify && !ok {
			return nil, fmt.Errorf("workflow %s: step %q has policy verify but no Verify", def.Name, sd.Name)
		}
	}
	now := r.Now
	if now == nil {
		now = time.Now
	}
	want := r.Binding
	want.Workflow = def.Name
	want.Definition = def.Hash()

	w := &runWrites{}
	defer func() {
		if err != nil && w.any() {
			err = w.runError(def.Name, r.Journal, err)
		}
	}()
	lockExisted := pathExists(r.Journal + ".lock")
	lock, err := safefile.TryLock(r.Journal+".lock", 0o600)
	w.lockCreated = !lockExisted && pathExists(r.Journal+".lock")
	if err != nil {
		if errors.Is(err, safefile.ErrLocked) {
			return nil, fmt.Errorf("%s %s: %w", def.Name, r.Journal, ErrLocked)
		}
		return nil, fmt.Errorf("%s: lock %s: %w", def.Name, r.Journal, err)
	}
	defer lock.Unlock()

	// Nothing is written until the run is known to go ahead: Open leaves a
	// torn tail in place, the binding and the replay are checked, and an
	// interrupted step is resolved (refusals included) first.
	j, recs, torn, err := journal.Open(r.Journal)
	switch {
	case errors.Is(err, os.ErrNotExist):
		j, err = journal.Create(r.Journal, 0o600)
		w.journalCreated = pathExists(r.Journal)
		if err != nil {
			return nil, err
		}
		recs = nil
	case err != nil:
		return nil, err
	}
	defer j.Close()

	if b := headerBinding(recs); b != nil {
		if d := b.differences(want); len(d) > 0 {
			return nil, &BindingError{Journal: r.Journal, Differences: d}
		}
	}
	rp, err := replayRecords(def, recs)
	if err != nil {
		return nil, &RefusedError{Workflow: def.Name, Reason: "cannot be resumed: " + err.Error(), Journal: r.Journal,
			Hint: "Inspect the journal with `oac-node-install status`; it was left as it is"}
	}
	e := &execution{r: r, j: j, lock: lock, rp: rp, torn: torn, now: now, w: w, kind: RunFresh}
	switch {
	case rp.ended:
		e.kind = RunConverged
	case rp.records > 1: // more than the header: a step began
		e.kind = RunResumed
	}
	if rp.binding == nil {
		if err := e.append(Record{Type: RecordHeader, Binding: &want}); err != nil {
			return e.report(), err
		}
	}
	if rp.ended {
		return e.report(), nil
	}
	if err := e.loop(ctx); err != nil {
		return e.report(), err
	}
	return e.report(), nil
}

// headerBinding returns the binding of the journal's header record, or nil
// when the first record is not a header (replay then says why).
func headerBinding(recs [][]byte) *Binding {
	if len(recs) == 0 {
		return nil
	}
	first, err := decodeRecord(recs[0])
	if err != nil || first.Type != RecordHeader {
		return nil
	}
	return first.Binding
}

// execution is one Run in progress.
type execution struct {
	r    *Runner
	j    *journal.Journal
	lock *safefile.FileLock
	rp   *replay
	now  func() time.Time
	// torn is the torn tail Open found, cut before the first record is
	// written; cut is the cut made.
	torn *journal.Tail
	cut  *journal.Tail
	// w is what this run changed on disk.
	w *runWrites
	// kind is what the run does with the journal it found (Report.Run).
	kind RunKind
}

// runWrites is what one Run changed on disk, for a *RunError.
type runWrites struct {
	lockCreated, journalCreated, appended bool
	completed                             []string
	failed                                string
	failedUnchanged                       bool
}

func (w *runWrites) any() bool { return w.lockCreated || w.journalCreated || w.appended }

func (w *runWrites) runError(name, path string, err error) *RunError {
	return &RunError{Err: err, Workflow: name, Journal: path, LockCreated: w.lockCreated, JournalCreated: w.journalCreated,
		Appended: w.appended, Completed: w.completed, Failed: w.failed, FailedUnchanged: w.failedUnchanged}
}

// pathExists reports whether p names anything (a failure to look counts as
// nothing: the caller reports only what it knows it made).
func pathExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// append writes one record: it checks that this run still holds the
// instance lock, cuts a torn tail before the first record, applies the
// record to a copy of the replay (the same apply that replays the journal,
// so that nothing is written that would not replay), makes it durable, and
// only then takes the copy as the run's state.
func (e *execution) append(rec Record) error {
	if err := e.holdsLock(); err != nil {
		return err
	}
	e.w.appended = true // from here on the file may change, even if the write fails
	if e.torn != nil {
		cut, err := e.j.Repair()
		if err != nil {
			return err
		}
		e.torn, e.cut = nil, cut
	}
	rec.Time = e.now().UTC()
	next := e.rp.clone()
	if err := next.apply(rec); err != nil {
		return fmt.Errorf("%s: %s record not written, the journal could not replay it: %w", e.r.Def.Name, rec.Type, err)
	}
	b, err := encodeRecord(rec)
	if err != nil {
		return err
	}
	if err := e.j.Append(b); err != nil {
		return err
	}
	e.rp = next
	return nil
}

// holdsLock checks that the lock path still names the file this run locked.
// A lock file renamed over or removed excludes nobody: another run may be
// writing the same journal, so this one stops before writing more.
func (e *execution) holdsLock() error {
	dev, ino := e.lock.FileID()
	var st unix.Stat_t
	if err := unix.Lstat(e.lock.Path(), &st); err != nil || st.Dev != dev || st.Ino != ino {
		return fmt.Errorf("%s: the instance lock %s no longer names the file this run locked; another run may hold it, so nothing more was written to %s: %w",
			e.r.Def.Name, e.lock.Path(), e.r.Journal, safefile.ErrLockReplaced)
	}
	return nil
}

func (e *execution) observe(p Progress) {
	if e.r.Observe != nil {
		p.Workflow = e.r.Def.Name
		e.r.Observe(p)
	}
}

func (e *execution) loop(ctx context.Context) error {
	def := e.r.Def
	for e.rp.state != def.Final {
		sd, ok := def.State(e.rp.state)
		if !ok {
			return fmt.Errorf("%s: no state %q", def.Name, e.rp.state)
		}
		step := e.r.Steps[sd.Name]
		if p := e.rp.pending; p != nil {
			res, run, err := e.resolve(ctx, sd, step, p)
			if err != nil {
				return err
			}
			if !run {
				if err := e.finish(sd, res, true); err != nil {
					return err
				}
				continue
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: before %s: %w: %w", def.Name, sd.Name, errInterrupted, err)
		}
		if err := e.append(Record{Type: RecordBegin, State: sd.Name, Step: sd.step(), Attempt: e.rp.attempts[sd.step()] + 1}); err != nil {
			return err
		}
		e.observe(Progress{State: sd.Name, Step: sd.step(), Doc: sd.Doc, Phase: PhaseBegin})
		e.w.failed, e.w.failedUnchanged = sd.step(), false
		res, err := step.Run(ctx, maps.Clone(e.rp.facts))
		if err != nil {
			if ctx.Err() != nil && !IsUnchanged(err) {
				err = fmt.Errorf("%w: %w", errInterrupted, err)
			}
			return e.fail(sd, err)
		}
		if err := e.finish(sd, res, false); err != nil {
			return err
		}
	}
	return e.append(Record{Type: RecordEnd, State: def.Final})
}

// resolve decides what to do with a step that began and did not finish. It
// returns run=false with the verified result when the step's effect is
// complete.
func (e *execution) resolve(ctx context.Context, sd StateDef, step Step, p *Pending) (Result, bool, error) {
	refuse := func(reason, hint string) (Result, bool, error) {
		return Result{}, false, &RefusedError{Workflow: e.r.Def.Name, State: sd.Name, Step: sd.step(), Reason: reason, Hint: hint, Journal: e.r.Journal}
	}
	how := "was interrupted"
	if p.Failed {
		how = "failed part way"
	}
	switch sd.Policy {
	case Rerun:
		e.observe(Progress{State: sd.Name, Step: sd.step(), Doc: sd.Doc, Phase: PhaseResumed})
		return Result{}, true, nil
	case Verify:
		out, res, err := step.(Verifier).Verify(ctx, maps.Clone(e.rp.facts))
		if err != nil {
			return refuse(how+" and its effect could not be verified: "+err.Error(), "Check what the step changes on the host, then rerun the same command")
		}
		switch out {
		case Done:
			return res, false, nil
		case NotDone:
			e.observe(Progress{State: sd.Name, Step: sd.step(), Doc: sd.Doc, Phase: PhaseResumed})
			return Result{}, true, nil
		default:
			return refuse(how+" and the host does not show whether it completed", "Inspect what this step changes (see `oac-node-install status`) before rerunning")
		}
	default:
		return refuse(how+"; it leaves a state only an operator may judge", "Inspect it with `oac-node-install status` and `oac-node-install leases`")
	}
}

// finish records a step's success; the replay moves to the next state.
func (e *execution) finish(sd StateDef, res Result, verified bool) error {
	ev := res.Event
	if ev == "" {
		ev = sd.On[0].Event
	}
	to, err := e.r.Def.Next(sd.Name, ev)
	if err != nil {
		return e.fail(sd, fmt.Errorf("step returned event %q, which state %s does not have", ev, sd.Name))
	}
	if err := e.append(Record{Type: RecordDone, State: sd.Name, Step: sd.step(), Event: ev, To: to, Facts: res.Facts, Verified: verified}); err != nil {
		return err
	}
	e.w.completed = append(e.w.completed, sd.step())
	e.w.failed = ""
	phase := PhaseDone
	if verified {
		phase = PhaseVerified
	}
	e.observe(Progress{State: sd.Name, Step: sd.step(), Doc: sd.Doc, Phase: phase})
	return nil
}

// fail records a step's failure and returns it wrapped with the step name.
func (e *execution) fail(sd StateDef, err error) error {
	class := classOf(err)
	e.w.failed, e.w.failedUnchanged = sd.step(), IsUnchanged(err)
	rec := Record{Type: RecordFail, State: sd.Name, Step: sd.step(), Class: class, Error: err.Error(), Unchanged: IsUnchanged(err)}
	if aerr := e.append(rec); aerr != nil {
		return errors.Join(&StepError{Workflow: e.r.Def.Name, Step: sd.step(), Class: class, Err: err}, aerr)
	}
	e.observe(Progress{State: sd.Name, Step: sd.step(), Doc: sd.Doc, Phase: PhaseFail, Err: err})
	return &StepError{Workflow: e.r.Def.Name, Step: sd.step(), Class: class, Err: err}
}

func (e *execution) report() *Report {
	rep := buildReport(e.r.Def, e.r.Journal, e.rp, e.torn)
	rep.LastCut = e.cut
	rep.Run = e.kind
	if rep.LastCut == nil {
		rep.LastCut, _ = journal.LastCut(e.r.Journal) // status shows it too; the run does not depend on it
	}
	return rep
}
