package privsep

import (
	"errors"
	"fmt"
)

// Error classes a child reports with a failure. A handler gives an error its
// class by type (WithClass, or any error with a Class() string method),
// never by its text.
const (
	// ClassTransfer: a download or its verification failed; a rerun may
	// succeed.
	ClassTransfer = "transfer"
	// ClassRefused: the child found a state it must not change; it changed
	// nothing, or only what a rerun repeats identically. Its message does
	// not say so: the parent reports it as a workflow.Refusal, and the
	// command says "Nothing was changed." only when it changed nothing.
	ClassRefused = "refused"
	// ClassUnregistered: Core refused the node's registration for good
	// (its public URL is not the one the node was given): the node never
	// registered, and the child discarded the node root's unregistered
	// state; root discards its own records of the installation.
	ClassUnregistered = "unregistered"
	// ClassInternal: anything else.
	ClassInternal = "internal"
)

// ErrInterrupted is returned by Run when SIGINT, SIGHUP or SIGTERM reached
// the parent or the context ended while the child ran. The child and its
// process group were stopped; rerunning the same command resumes.
var ErrInterrupted = errors.New("interrupted; rerun the same command to continue")

// ErrStopped is returned (wrapped) by Session.Call when its child stayed
// stopped (SIGSTOP) for too long; the child and its group were ended.
var ErrStopped = errors.New("stayed stopped")

// ErrNoResult is returned (wrapped) by Run when the child ended without
// reporting a result or an error, for example because it crashed or was
// killed by someone else.
var ErrNoResult = errors.New("the service-account process ended without a result")

// ErrProtocol is returned (wrapped) by Run when the child sent a message
// that is not part of the protocol.
var ErrProtocol = errors.New("malformed message from the service-account process")

// ErrRoot is returned when a child would run, or finds itself running, with
// user or group id 0. The child exists to drop root; it never runs as root.
var ErrRoot = errors.New("the service-account process must not run as root")

// ErrUnknownRole is reported by a child asked for a role it has no handler
// for (an internal error: parent and child are the same binary).
var ErrUnknownRole = errors.New("unknown service-account role")

// classer is what a handler's error may implement to carry a class.
type classer interface{ Class() string }

// classError attaches a class to an error.
type classError struct {
	class string
	err   error
}

func (e *classError) Error() string { return e.err.Error() }
func (e *classError) Unwrap() error { return e.err }
func (e *classError) Class() string { return e.class }

// WithClass returns err marked with class (one of the Class constants), for
// a handler to return. It returns nil for a nil err.
func WithClass(class string, err error) error {
	if err == nil {
		return nil
	}
	return &classError{class: class, err: err}
}

// ClassOf returns the class carried by err or anything it wraps, and
// ClassInternal when there is none.
func ClassOf(err error) string {
	var c classer
	if errors.As(err, &c) && c.Class() != "" {
		return c.Class()
	}
	return ClassInternal
}

// ChildError is the failure a child reported, as Run returns it. Message is
// the child's error text with terminal controls replaced.
type ChildError struct {
	Role    string
	Message string
	class   string
}

func (e *ChildError) Error() string {
	return fmt.Sprintf("%s (as %s): %s", e.Role, AccountName, e.Message)
}

// Class is the class the child gave the failure (one of the Class
// constants; an unknown class from the child reads as ClassInternal).
func (e *ChildError) Class() string { return e.class }

// knownClass maps what a child sent to a known class.
func knownClass(c string) string {
	switch c {
	case ClassTransfer, ClassRefused, ClassUnregistered, ClassInternal:
		return c
	}
	return ClassInternal
}
