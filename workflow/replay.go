package workflow

import (
	"fmt"
	"maps"
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

// replayRecords folds the records into a replay, checking each transition
// against def's state machine. def may be nil only for a journal without
// records.
func replayRecords(def *Definition, recs [][]byte) (*replay, error) {
	rp := &replay{facts: map[string]string{}, attempts: map[string]int{}}
	if len(recs) == 0 {
		return rp, nil
	}
	m := def.NewFSM(def.Initial())
	rp.state = def.Initial()
	var began time.Time
	for i, raw := range recs {
		r, err := decodeRecord(raw)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", i+1, err)
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("record %d (%s): %s", i+1, r.Type, fmt.Sprintf(format, args...))
		}
		if i == 0 && r.Type != RecordHeader {
			return nil, bad("the first record must be the header")
		}
		if rp.ended {
			return nil, bad("record after the end of the run")
		}
		rp.updated = r.Time
		switch r.Type {
		case RecordHeader:
			if i != 0 || r.Binding == nil {
				return nil, bad("misplaced or empty header")
			}
			b := *r.Binding
			rp.binding = &b
			rp.started = r.Time
		case RecordBegin:
			if r.State != rp.state {
				return nil, bad("step %q begins in state %q but the run is in %q", r.Step, r.State, rp.state)
			}
			sd, ok := def.State(r.State)
			if !ok || sd.Step != r.Step {
				return nil, bad("state %q has no step %q", r.State, r.Step)
			}
			rp.attempts[r.Step]++
			rp.pending = &Pending{State: r.State, Step: r.Step, Attempt: rp.attempts[r.Step], Began: r.Time}
			began = r.Time
		case RecordDone:
			if rp.pending == nil || rp.pending.Step != r.Step || rp.pending.Failed {
				return nil, bad("step %q is done without a begin", r.Step)
			}
			if !def.HasState(r.To) {
				return nil, bad("unknown state %q", r.To)
			}
			if err := m.Event(nonCancel(), string(r.Event)); err != nil {
				return nil, bad("event %q is not allowed in state %q: %v", r.Event, rp.state, err)
			}
			if State(m.Current()) != r.To {
				return nil, bad("event %q leads to %q, the journal says %q", r.Event, m.Current(), r.To)
			}
			maps.Copy(rp.facts, r.Facts)
			rp.completed = append(rp.completed, StepRecord{
				State: r.State, Step: r.Step, Event: r.Event, To: r.To,
				Began: began, Done: r.Time, Attempts: rp.attempts[r.Step], Verified: r.Verified,
			})
			rp.state = r.To
			rp.pending = nil
		case RecordFail:
			if rp.pending == nil || rp.pending.Step != r.Step {
				return nil, bad("step %q failed without a begin", r.Step)
			}
			rp.lastError = &Failure{State: r.State, Step: r.Step, Class: r.Class, Error: r.Error, Unchanged: r.Unchanged, Time: r.Time}
			if r.Unchanged {
				rp.pending = nil
			} else {
				rp.pending.Failed = true
			}
		case RecordEnd:
			if rp.pending != nil && !rp.pending.Failed {
				return nil, bad("the run ends while step %q is pending", rp.pending.Step)
			}
			if rp.state != def.Final {
				return nil, bad("the run ends in state %q, not the final state %q", rp.state, def.Final)
			}
			rp.ended = true
		}
	}
	return rp, nil
}
