package workflow

import (
	"context"
	"fmt"
	"maps"
)

// Checker is implemented by steps that can tell, without changing
// anything on the host, whether their effect is already there. Check
// returns Done with the Result Run would return when it is, and NotDone
// when Run has something to do. An error is a refusal (IsUnchanged or
// the step's refusal type) or a failure to look; neither changed anything.
// Check must not write: no file, no lock file, no database transaction.
type Checker interface {
	Check(ctx context.Context, facts Facts) (Outcome, Result, error)
}

// CheckReport is the outcome of Check over a whole workflow.
type CheckReport struct {
	// Satisfied is set when every step reported Done: a run would change
	// nothing.
	Satisfied bool
	// Unsatisfied names the steps that reported NotDone, in order.
	Unsatisfied []string
	// Facts are the facts the checked steps reported.
	Facts Facts
}

// Check asks every step of def, from the initial state along the events
// the checks report, whether its effect is already on the host. It writes
// nothing: no journal, no lock. A step that reports NotDone does not stop
// the walk (its first transition is followed), so that a later step's
// refusal is still found before a run changes anything; later steps see
// the facts reported so far and report NotDone where they depend on what
// is missing. The first error stops the walk and is returned with the
// step's name. A step without a Checker is NotDone.
func Check(ctx context.Context, def *Definition, steps map[State]Step) (*CheckReport, error) {
	if err := def.Validate(); err != nil {
		return nil, err
	}
	rep := &CheckReport{Facts: Facts{}}
	for s := def.Initial(); s != def.Final; {
		sd, ok := def.State(s)
		if !ok {
			return nil, fmt.Errorf("%s: no state %q", def.Name, s)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out, res := NotDone, Result{}
		if c, ok := steps[sd.Name].(Checker); ok {
			var err error
			out, res, err = c.Check(ctx, maps.Clone(rep.Facts))
			if err != nil {
				return rep, &CheckError{Workflow: def.Name, Step: sd.step(), Err: err}
			}
		}
		if out != Done {
			rep.Unsatisfied = append(rep.Unsatisfied, sd.step())
			res = Result{}
		}
		maps.Copy(rep.Facts, res.Facts)
		ev := res.Event
		if ev == "" {
			ev = sd.On[0].Event
		}
		next, err := def.Next(sd.Name, ev)
		if err != nil {
			return rep, fmt.Errorf("%s: step %s checked event %q, which state %s does not have", def.Name, sd.step(), res.Event, sd.Name)
		}
		s = next
	}
	rep.Satisfied = len(rep.Unsatisfied) == 0
	return rep, nil
}

// CheckError is a step's error during Check: nothing was changed.
type CheckError struct {
	Workflow string
	Step     string
	Err      error
}

// Error names the workflow and the step's error, not the step: a Checker
// may answer for several steps at once (the install workflow's
// service-account steps, in one child), and its error names the one.
func (e *CheckError) Error() string { return fmt.Sprintf("%s: %v", e.Workflow, e.Err) }

func (e *CheckError) Unwrap() error { return e.Err }
