package workflow

import (
	"errors"
	"fmt"
	"strings"
)

// ErrRefused is returned (wrapped in *RefusedError) when the engine will not
// resume a journal: an interrupted Inspect step, a Verify that cannot tell,
// or a journal it cannot make sense of. Nothing was changed by the refusal.
var ErrRefused = errors.New("workflow refused to resume")

// ErrBindingMismatch is returned (wrapped in *BindingError) when a journal
// was written for another workflow, definition, version or instance.
var ErrBindingMismatch = errors.New("journal binding does not match this run")

// ErrLocked is returned when another process runs the same workflow instance.
var ErrLocked = errors.New("another run of this workflow instance holds its lock")

// RefusedError says which step the engine refused to resume and what the
// operator should look at.
type RefusedError struct {
	Workflow string
	State    State
	Step     string
	Reason   string
	Hint     string
	Journal  string
}

func (e *RefusedError) Error() string {
	msg := fmt.Sprintf("%s: step %q (state %s) %s; journal %s", e.Workflow, e.Step, e.State, e.Reason, e.Journal)
	if e.Hint != "" {
		msg += ". " + e.Hint
	}
	return msg
}

// Unwrap lets callers test with errors.Is(err, ErrRefused).
func (e *RefusedError) Unwrap() error { return ErrRefused }

// BindingError names every field in which a journal's header differs from
// the current run.
type BindingError struct {
	Journal     string   `json:"journal"`
	Differences []string `json:"differences"`
}

func (e *BindingError) Error() string {
	return fmt.Sprintf("journal %s belongs to another run (%s); it was left as it is", e.Journal, strings.Join(e.Differences, "; "))
}

// Unwrap lets callers test with errors.Is(err, ErrBindingMismatch).
func (e *BindingError) Unwrap() error { return ErrBindingMismatch }

// StepError is a step's failure as the engine reports it: the workflow, the
// step, the error class written to the journal, and the step's error.
type StepError struct {
	Workflow string
	Step     string
	Class    string
	Err      error
}

func (e *StepError) Error() string { return fmt.Sprintf("%s: %s: %v", e.Workflow, e.Step, e.Err) }

// Unwrap returns the step's error.
func (e *StepError) Unwrap() error { return e.Err }

// Classifier is implemented by step errors that carry a class for the
// journal and for callers (for example "transfer" for download failures).
type Classifier interface{ Class() string }

// ClassOf returns the class of err: the first Classifier in its chain, else
// "interrupted" for a cancelled context, else "error".
func ClassOf(err error) string {
	var c Classifier
	if errors.As(err, &c) {
		return c.Class()
	}
	if errors.Is(err, errInterrupted) {
		return "interrupted"
	}
	return "error"
}

var errInterrupted = errors.New("interrupted")

// Unchanged marks a step error returned before the step changed anything, so
// that a rerun treats the step as never begun, whatever its policy.
func Unchanged(err error) error {
	if err == nil {
		return nil
	}
	return &unchangedError{err}
}

type unchangedError struct{ err error }

func (e *unchangedError) Error() string { return e.err.Error() }
func (e *unchangedError) Unwrap() error { return e.err }

// IsUnchanged reports whether err was marked with Unchanged.
func IsUnchanged(err error) bool {
	var u *unchangedError
	return errors.As(err, &u)
}
