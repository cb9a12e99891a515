package workflow

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// StepRecord is one completed step as the journal shows it.
type StepRecord struct {
	State    State     `json:"state"`
	Step     string    `json:"step"`
	Event    Event     `json:"event"`
	To       State     `json:"to"`
	Began    time.Time `json:"began"`
	Done     time.Time `json:"done"`
	Attempts int       `json:"attempts"`
	Verified bool      `json:"verified,omitempty"`
}

// Pending is a step whose begin record has no done record after it.
type Pending struct {
	State   State     `json:"state"`
	Step    string    `json:"step"`
	Attempt int       `json:"attempt"`
	Began   time.Time `json:"began"`
	// Failed is set when the step recorded a failure (rather than being
	// interrupted without a record). Unchanged failures leave no Pending.
	Failed bool `json:"failed,omitempty"`
}

// Failure is the last fail record of a run.
type Failure struct {
	State     State     `json:"state"`
	Step      string    `json:"step"`
	Class     string    `json:"class"`
	Error     string    `json:"error"`
	Unchanged bool      `json:"unchanged,omitempty"`
	Time      time.Time `json:"time"`
}

// replay is what a journal's records say about a run.
type replay struct {
	def       *Definition
	records   int
	binding   *Binding
	state     State
	facts     map[string]string
	pending   *Pending
	lastError *Failure
	completed []StepRecord
	attempts  map[string]int
	ended     bool
	started   time.Time
	updated   time.Time
}

func newReplay(def *Definition) *replay {
	return &replay{def: def, facts: map[string]string{}, attempts: map[string]int{}}
}

// clone returns a copy that apply can change without changing rp.
func (rp *replay) clone() *replay {
	c := *rp
	c.facts = maps.Clone(rp.facts)
	c.attempts = maps.Clone(rp.attempts)
	c.completed = slices.Clone(rp.completed)
	if rp.pending != nil {
		p := *rp.pending
		c.pending = &p
	}
	return &c
}

// replayRecords folds the records into a replay, checking each against
// def's state machine. def may be nil only for a journal without records.
func replayRecords(def *Definition, recs [][]byte) (*replay, error) {
	rp := newReplay(def)
	for i, raw := range recs {
		r, err := decodeRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i+1, err)
		}
		if err := rp.apply(r); err != nil {
			return nil, err
		}
	}
	return rp, nil
}

// apply folds one record into the replay, after checking that it may
// follow the records before it. It is the one definition of what a record
// means: replayRecords applies every record it reads, and the engine
// applies every record it is about to write to a clone of its replay, and
// writes only a record that applies. A journal the engine wrote therefore
// always replays.
//
// The rules: the header comes first and once. A begin names the current
// state and its step, with the next attempt number; it may follow an
// interrupted or failed attempt of the same step. A done follows a begin
// of its step, or, when the step's Verify established it (Verified), any
// attempt of a Verify step still pending, interrupted or failed; its event
// must lead, by the definition, to the state it names. A fail follows a
// begin of its step; an Unchanged fail clears the attempt. The end comes
// last, in the final state, with no step pending.
func (rp *replay) apply(r Record) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("record %d (%s): %s", rp.records+1, r.Type, fmt.Sprintf(format, args...))
	}
	if rp.records == 0 && r.Type != RecordHeader {
		return bad("the first record must be the header")
	}
	if rp.ended {
		return bad("record after the end of the run")
	}
	def := rp.def
	switch r.Type {
	case RecordHeader:
		if rp.records != 0 || r.Binding == nil {
			return bad("misplaced or empty header")
		}
		b := *r.Binding
		rp.binding = &b
		rp.state = def.Initial()
		rp.started = r.Time
	case RecordBegin:
		if r.State != rp.state {
			return bad("step %q begins in state %q but the run is in %q", r.Step, r.State, rp.state)
		}
		sd, ok := def.State(r.State)
		if !ok || sd.step() != r.Step {
			return bad("state %q has no step %q", r.State, r.Step)
		}
		if want := rp.attempts[r.Step] + 1; r.Attempt != want {
			return bad("step %q begins attempt %d, the journal holds %d before it", r.Step, r.Attempt, want-1)
		}
		rp.attempts[r.Step]++
		rp.pending = &Pending{State: r.State, Step: r.Step, Attempt: r.Attempt, Began: r.Time}
	case RecordDone:
		p := rp.pending
		if p == nil || p.Step != r.Step || p.State != r.State {
			return bad("step %q is done without a begin", r.Step)
		}
		if r.Verified {
			if sd, _ := def.State(r.State); sd.Policy != Verify {
				return bad("step %q is verified done but its policy is %s", r.Step, sd.Policy)
			}
		} else if p.Failed {
			return bad("step %q is done after it failed, without a new begin or a verification", r.Step)
		}
		if !def.hasState(r.To) {
			return bad("unknown state %q", r.To)
		}
		to, err := def.Next(rp.state, r.Event)
		if err != nil {
			return bad("event %q is not allowed in state %q: %v", r.Event, rp.state, err)
		}
		if to != r.To {
			return bad("event %q leads to %q, the journal says %q", r.Event, to, r.To)
		}
		maps.Copy(rp.facts, r.Facts)
		rp.completed = append(rp.completed, StepRecord{
			State: r.State, Step: r.Step, Event: r.Event, To: r.To,
			Began: p.Began, Done: r.Time, Attempts: rp.attempts[r.Step], Verified: r.Verified,
		})
		rp.state = r.To
		rp.pending = nil
	case RecordFail:
		if rp.pending == nil || rp.pending.Step != r.Step || rp.pending.State != r.State {
			return bad("step %q failed without a begin", r.Step)
		}
		rp.lastError = &Failure{State: r.State, Step: r.Step, Class: r.Class, Error: r.Error, Unchanged: r.Unchanged, Time: r.Time}
		if r.Unchanged {
			rp.pending = nil
		} else {
			rp.pending.Failed = true
		}
	case RecordEnd:
		if rp.pending != nil {
			return bad("the run ends while step %q is pending", rp.pending.Step)
		}
		if rp.state != def.Final || r.State != def.Final {
			return bad("the run ends in state %q, not the final state %q", rp.state, def.Final)
		}
		rp.ended = true
	default:
		return bad("unknown record type")
	}
	rp.records++
	rp.updated = r.Time
	return nil
}
