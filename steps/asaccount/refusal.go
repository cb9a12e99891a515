package asaccount

import (
	"errors"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The one mapping of a step's failure across the pipe, by type, never by
// text:
//
//	child (classify)                        parent
//	Errors.Unregistered ─ ClassUnregistered ─▶ Unregistered: the node never
//	                                           registered; root discards its records
//	*workflow.Refusal ─── ClassRefused ──────▶ Refused, StepErr: a refusal
//	                                           that changed nothing
//	Errors.Transfer ───── ClassTransfer
//	anything else ─────── ClassInternal
//
// A step run in process (tests) returns its *workflow.Refusal as it is:
// Refused and StepErr take it as the child's refusal.

// Errors picks out a workflow's own error types that the child reports
// with a class of their own; a *workflow.Refusal needs none. A nil func
// picks out nothing.
type Errors struct {
	// Unregistered reports Core's refusal of the node's registration for
	// good (ClassUnregistered); it outranks a refusal.
	Unregistered func(error) bool
	// Transfer reports a failure to obtain or prove an artifact's bytes
	// (ClassTransfer); a refusal outranks it.
	Transfer func(error) bool
}

// classify gives a step's error in the child its privsep class.
func classify(err error, own Errors) error {
	var ref *workflow.Refusal
	switch {
	case err == nil:
		return nil
	case own.Unregistered != nil && own.Unregistered(err):
		return privsep.WithClass(privsep.ClassUnregistered, err)
	case errors.As(err, &ref):
		return privsep.WithClass(privsep.ClassRefused, err)
	case own.Transfer != nil && own.Transfer(err):
		return privsep.WithClass(privsep.ClassTransfer, err)
	}
	return err
}

// Refused reports whether err holds a refusal of a step run as the service
// account: a child's failure of ClassRefused, or a *workflow.Refusal
// returned by a step run in process.
func Refused(err error) bool {
	var ref *workflow.Refusal
	return childClass(err, privsep.ClassRefused) || errors.As(err, &ref)
}

// Unregistered reports whether err holds a child's failure of
// ClassUnregistered: Core refused the node's registration for good, so the
// node never registered.
func Unregistered(err error) bool {
	return childClass(err, privsep.ClassUnregistered)
}

// childClass reports whether err holds a child's failure of class.
func childClass(err error, class string) bool {
	var ce *privsep.ChildError
	return errors.As(err, &ce) && ce.Class() == class
}

// StepErr is err as a step run as the service account returns it: a
// refusal (Refused) as a workflow.Refusal that changed nothing, so that the
// engine records the step as never begun and the command reports the
// refusal as it stands, saying "Nothing was changed." only when nothing
// was; any other error as it is.
func StepErr(err error) error {
	if Refused(err) {
		return workflow.Unchanged(workflow.Refuse(err))
	}
	return err
}
