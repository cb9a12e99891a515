package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// errRefused is returned (wrapped in *RefusedError) when the engine will not
// resume a journal: an interrupted Inspect step, a Verify that cannot tell,
// or a journal it cannot make sense of. Nothing was changed by the refusal.
var errRefused = errors.New("workflow refused to resume")

// errBindingMismatch is returned (wrapped in *BindingError) when a journal
// was written for another workflow, definition, version or instance.
var errBindingMismatch = errors.New("journal binding does not match this run")

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

// Unwrap returns errRefused, which every refusal to resume wraps; callers
// find the refusal with errors.As and *RefusedError.
func (e *RefusedError) Unwrap() error { return errRefused }

// BindingError names every field in which a journal's header differs from
// the current run.
type BindingError struct {
	Journal     string   `json:"journal"`
	Differences []string `json:"differences"`
}

func (e *BindingError) Error() string {
	return fmt.Sprintf("journal %s belongs to another run (%s); it was left as it is", e.Journal, strings.Join(e.Differences, "; "))
}

// Unwrap returns errBindingMismatch, which every binding mismatch wraps;
// callers find it with errors.As and *BindingError.
func (e *BindingError) Unwrap() error { return errBindingMismatch }

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

// classOf returns the class of err: the first Classifier in its chain, else
// "interrupted" for a cancelled context, else "error".
func classOf(err error) string {
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

// Refusal is the one refusal type: a command, a check or a step found a
// state it must not change, or one it cannot judge, and changed nothing
// itself. Err says what was found; Hint, when set, the operator's next
// step. Its text never says that nothing was changed: whether the whole
// command changed anything is the command's to say where it prints the
// failure (Message). A refusal that comes after the command changed the
// host is wrapped in a *Changed, which names what changed instead.
type Refusal struct {
	Err  error
	Hint string
}

func (e *Refusal) Error() string {
	msg := e.Err.Error()
	if e.Hint != "" {
		msg += ". " + e.Hint
	}
	return msg
}

// Unwrap returns what was found.
func (e *Refusal) Unwrap() error { return e.Err }

// Refuse returns err as a refusal: err itself when it holds a *Refusal
// already, nil for nil.
func Refuse(err error) error {
	var r *Refusal
	if err == nil || errors.As(err, &r) {
		return err
	}
	return &Refusal{Err: err}
}

// Refusef is a refusal with the formatted text (%w wraps as in
// fmt.Errorf).
func Refusef(format string, args ...any) error {
	return &Refusal{Err: fmt.Errorf(format, args...)}
}

// Changed is a command's failure after it changed the host: the failure,
// what the command changed before it (each a phrase: RunError.Changes and
// what the command did around the engine), and the next command ("" when
// the failure names it). Its text says what changed where a refusal
// before any change says "Nothing was changed.".
type Changed struct {
	Err     error
	Changes []string
	Next    string
}

func (e *Changed) Error() string {
	msg := strings.TrimSuffix(e.Err.Error(), ".") + ". Changed before the failure: " + strings.Join(e.Changes, "; ") + "."
	if e.Next != "" {
		msg += " " + e.Next
	}
	return msg
}

// Unwrap returns the failure.
func (e *Changed) Unwrap() error { return e.Err }

// AfterChanges is err as the failure of a command that made changes before
// it: err itself when changes is empty (or err is nil), else a *Changed.
func AfterChanges(err error, changes []string, next string) error {
	if err == nil || len(changes) == 0 {
		return err
	}
	return &Changed{Err: err, Changes: changes, Next: next}
}

// Advised is a failure before any change with the next thing to do (a full
// file system: NoSpace).
type Advised struct {
	Err  error
	Next string
}

func (e *Advised) Error() string {
	return strings.TrimSuffix(e.Err.Error(), ".") + ". " + e.Next
}

// Unwrap returns the failure.
func (e *Advised) Unwrap() error { return e.Err }

// Advise is err with next said after it; err itself when next is "" (or
// err is nil).
func Advise(err error, next string) error {
	if err == nil || next == "" {
		return err
	}
	return &Advised{Err: err, Next: next}
}

// NothingChanged reports whether err is a refusal that changed nothing: it
// holds a *Refusal and no *Changed.
func NothingChanged(err error) bool {
	var r *Refusal
	var c *Changed
	return errors.As(err, &r) && !errors.As(err, &c)
}

// NothingWasChanged is the sentence that ends a refusal that changed
// nothing, as the operator reads it (CONTRACT §10).
const NothingWasChanged = "Nothing was changed."

// Message is err's text as a command that changes the host prints it: a
// refusal that changed nothing (NothingChanged) ends with "Nothing was
// changed.", said once, here; any other failure is its own text (a
// *Changed names what changed).
func Message(err error) string {
	msg := err.Error()
	if NothingChanged(err) {
		msg = strings.TrimSuffix(msg, ".") + ". " + NothingWasChanged
	}
	return msg
}

// RunError is a Run's failure after the run changed something on disk:
// the instance's lock file or journal created, or records written. Its
// text is Err's; the fields are the engine's report of what this run
// changed, for the command to name (Changes).
type RunError struct {
	Err      error
	Workflow string
	Journal  string
	// LockCreated: this run created the instance lock file (Journal+".lock").
	LockCreated bool
	// JournalCreated: this run created the journal.
	JournalCreated bool
	// Appended: this run wrote records to the journal (or began to: a
	// write that failed may have left part of one, which the next run
	// cuts off).
	Appended bool
	// Completed are the steps whose done record this run wrote, in order.
	Completed []string
	// Failed is the step that was running when the run ended ("" when it
	// ended between steps); FailedUnchanged says that step's error was
	// marked Unchanged: it changed nothing.
	Failed          string
	FailedUnchanged bool
}

func (e *RunError) Error() string { return e.Err.Error() }

// Unwrap returns the run's failure (a *StepError, a *RefusedError, ...).
func (e *RunError) Unwrap() error { return e.Err }

// Changes names what the run changed, for an operator: the journal and
// its lock file, the steps completed, the step that failed after it may
// have begun its change.
func (e *RunError) Changes() []string {
	var out []string
	switch {
	case e.JournalCreated && e.LockCreated:
		out = append(out, fmt.Sprintf("the %s journal %s and its lock file (created)", e.Workflow, e.Journal))
	case e.JournalCreated:
		out = append(out, fmt.Sprintf("the %s journal %s (created)", e.Workflow, e.Journal))
	case e.LockCreated:
		out = append(out, fmt.Sprintf("the lock file %s.lock of the %s journal (created)", e.Journal, e.Workflow))
	}
	if e.Appended && !e.JournalCreated {
		out = append(out, fmt.Sprintf("the %s journal %s (records added)", e.Workflow, e.Journal))
	}
	if len(e.Completed) > 0 {
		out = append(out, "the steps completed in this run: "+strings.Join(e.Completed, ", "))
	}
	if e.Failed != "" && !e.FailedUnchanged {
		out = append(out, fmt.Sprintf("whatever the step %s did before it failed", e.Failed))
	}
	return out
}

// NoSpace is what to do first when err is a file system out of space
// (ENOSPC): which file system, and that the files of the service account
// (its home, home) count when they share it (a tmpfs or XFS keeps no
// reserve for root, so an account that filled the disk stops root's
// journal too). The sentence ends in "then", for the rerun. It is "" for
// any other error.
func NoSpace(err error, home string) string {
	if !errors.Is(err, syscall.ENOSPC) {
		return ""
	}
	var pe *fs.PathError
	var le *os.LinkError
	path := ""
	switch {
	case errors.As(err, &pe):
		path = pe.Path
	case errors.As(err, &le):
		path = le.New
	}
	if path == "" {
		return "A file system is full: free space on it (df -h shows which), then"
	}
	dir := filepath.Dir(path)
	return fmt.Sprintf("The file system holding %s is full: free space on it (df -h %s; the service account's files count where they share it: sudo du -sh %s), then", dir, dir, home)
}
