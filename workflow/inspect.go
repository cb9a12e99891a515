package workflow

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	"github.com/openagentcore/oac-node-install/journal"
)

// Condition summarises a journal for status output.
type Condition string

const (
	// Complete: the run reached its final state.
	Complete Condition = "complete"
	// Resumable: rerunning the same command continues the run.
	Resumable Condition = "resumable"
	// NeedsInspection: the run will not resume until an operator looks at
	// the state it left (an interrupted Inspect step, a corrupt journal).
	NeedsInspection Condition = "needs-inspection"
	// Failed: the last step failed; rerunning retries it by its policy.
	Failed Condition = "failed"
	// Incomplete: the run reached its final state but kept something
	// that a rerun finishes (an uninstallation that kept the service
	// account while a process ran as it). A journal never reads so:
	// the command that ran, and status, tell it from the journal's facts
	// (Report.Facts).
	Incomplete Condition = "incomplete"
)

// Report is a read-only view of one workflow journal.
type Report struct {
	Journal   string       `json:"journal"`
	Workflow  string       `json:"workflow"`
	Binding   *Binding     `json:"binding,omitempty"`
	State     State        `json:"state,omitempty"`
	Condition Condition    `json:"condition"`
	Completed []StepRecord `json:"completed"`
	Pending   *Pending     `json:"pending,omitempty"`
	// Policy is the pending step's recovery policy.
	Policy    string   `json:"policy,omitempty"`
	LastError *Failure `json:"last_error,omitempty"`
	// Attempts counts begin records per step.
	Attempts map[string]int `json:"attempts"`
	Started  time.Time      `json:"started,omitzero"`
	Updated  time.Time      `json:"updated,omitzero"`
	// Note explains a needs-inspection or failed condition and names the
	// operator's next step.
	Note string `json:"note,omitempty"`
	// TornTail is a torn final record found in the journal and not cut
	// off (yet): the next run that writes cuts it.
	TornTail *journal.Tail `json:"torn_tail,omitempty"`
	// LastCut is the last torn tail a run cut off, with the copy of the
	// original it kept (journal.LastCut).
	LastCut *journal.Tail `json:"last_cut,omitempty"`
	// BindingMismatch is set when the journal's header does not match
	// this binary's definition of its workflow; the records after the
	// header were not replayed.
	BindingMismatch *BindingError `json:"binding_mismatch,omitempty"`
	// Run says what the run that returned this report did with the
	// journal it found (Runner.Run sets it; a workflow's Run sets
	// RunConverged when it ran nothing). It is no part of the journal:
	// InspectJournal leaves it zero, and it is never encoded.
	Run RunKind `json:"-"`
	// Facts are the facts the journal's done records carried, the later
	// overriding the earlier (what the next step would be given). They
	// are no part of the report's encoding.
	Facts map[string]string `json:"-"`
	// Wrote lists files outside the workflow's steps that the command
	// wrote after its workflow ran (the command on the host and its
	// record): a converged workflow with writes is no unchanged run.
	Wrote []string `json:"-"`
}

// RunKind is what one run did with the journal it found: a command that
// reports its result to a fleet tool tells a changed host from a
// converged one by this type, never by the text it printed.
type RunKind string

const (
	// RunFresh: the run started a new journal (none, or only a header
	// before it) and ran its steps.
	RunFresh RunKind = "fresh"
	// RunResumed: the run continued an unfinished journal.
	RunResumed RunKind = "resumed"
	// RunConverged: the run found nothing to do (an ended journal, or a
	// workflow's check found every step satisfied) and wrote nothing.
	RunConverged RunKind = "converged"
)

// InspectJournal reads the journal at path without changing it (no torn tail is cut,
// no lock is taken) and reports its state. lookup finds the definition named
// by the journal's header; a journal of an unknown workflow, a corrupt
// journal or one from another definition reports needs-inspection.
func InspectJournal(path string, lookup func(name string) (*Definition, bool)) (*Report, error) {
	recs, tail, err := journal.Scan(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if errors.Is(err, journal.ErrCorrupt) {
			return &Report{Journal: path, Condition: NeedsInspection, Attempts: map[string]int{},
				Note: err.Error() + "; the journal is kept as it is: copy it aside and inspect it before rerunning"}, nil
		}
		return nil, err
	}
	rep := inspectRecords(path, recs, tail, lookup)
	if cut, err := journal.LastCut(path); err != nil {
		rep.Note = joinNote(rep.Note, "the copy kept of the last torn tail cannot be read: "+err.Error())
	} else {
		rep.LastCut = cut
	}
	return rep, nil
}

// inspectRecords is InspectJournal over records already read (for example by a
// child running as the service account).
func inspectRecords(path string, recs [][]byte, tail *journal.Tail, lookup func(string) (*Definition, bool)) *Report {
	rep := &Report{Journal: path, Attempts: map[string]int{}}
	if len(recs) == 0 {
		rep.Condition = Resumable
		rep.Note = "the journal holds no record yet"
		return rep
	}
	header := headerBinding(recs)
	if header == nil {
		rep.Condition = NeedsInspection
		rep.Note = "the journal does not start with a header record"
		return rep
	}
	rep.Workflow = header.Workflow
	rep.Binding = header
	def, ok := lookup(header.Workflow)
	if !ok {
		rep.Condition = NeedsInspection
		rep.Note = fmt.Sprintf("unknown workflow %q", header.Workflow)
		return rep
	}
	// The header first: records of another definition cannot be replayed
	// against this one, and the difference is what the operator must read.
	want := *header
	want.Workflow, want.Definition = def.Name, def.Hash()
	if d := header.differences(want); len(d) > 0 {
		rep.Condition = NeedsInspection
		rep.BindingMismatch = &BindingError{Journal: path, Differences: d}
		rep.Note = rep.BindingMismatch.Error() + ": it was written by a different definition of " + def.Name +
			" (another installer version); rerun with the version that wrote it"
		rep.TornTail = tail
		return rep
	}
	rp, err := replayRecords(def, recs)
	if err != nil {
		rep.Condition = NeedsInspection
		rep.Note = "the journal cannot be replayed: " + err.Error()
		rep.TornTail = tail
		return rep
	}
	return buildReport(def, path, rp, tail)
}

func buildReport(def *Definition, path string, rp *replay, tail *journal.Tail) *Report {
	rep := &Report{
		Journal:   path,
		Workflow:  def.Name,
		Binding:   rp.binding,
		State:     rp.state,
		Completed: append([]StepRecord(nil), rp.completed...),
		Pending:   rp.pending,
		LastError: rp.lastError,
		Attempts:  map[string]int{},
		Started:   rp.started,
		Updated:   rp.updated,
		Facts:     maps.Clone(rp.facts),
	}
	for k, v := range rp.attempts {
		rep.Attempts[k] = v
	}
	switch {
	case rp.ended:
		rep.Condition = Complete
	case rp.pending != nil:
		sd, _ := def.State(rp.pending.State)
		rep.Policy = sd.Policy.String()
		how := "was interrupted"
		if rp.pending.Failed {
			how = "failed after it may have changed the host"
		}
		switch sd.Policy {
		case Inspect:
			rep.Condition = NeedsInspection
			rep.Note = fmt.Sprintf("step %q %s; it leaves a state only an operator may judge", rp.pending.Step, how)
		case Verify:
			rep.Condition = Resumable
			rep.Note = fmt.Sprintf("step %q %s; a rerun verifies its effect on the host first", rp.pending.Step, how)
			if rp.pending.Failed {
				rep.Condition = Failed
			}
		default:
			rep.Condition = Resumable
			if rp.pending.Failed {
				rep.Condition = Failed
			}
		}
	case rp.lastError != nil && rp.lastError.State == rp.state:
		rep.Condition = Failed
	default:
		rep.Condition = Resumable
	}
	if rep.Condition == Failed && rep.Note == "" && rp.lastError != nil {
		rep.Note = fmt.Sprintf("step %q failed (%s): %s; rerun the same command to retry", rp.lastError.Step, rp.lastError.Class, rp.lastError.Error)
	}
	if tail != nil {
		rep.TornTail = tail
		rep.Note = joinNote(rep.Note, tail.String()+"; the next run that writes cuts it off and keeps a copy")
	}
	return rep
}

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}
