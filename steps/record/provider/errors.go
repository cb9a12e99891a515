package provider

import (
	"errors"
	"fmt"
)

// ErrMalformed is matched by every *FieldError: the bytes are not a
// configuration with exactly the contract's keys and value types, or a
// value breaks a rule of the format.
var ErrMalformed = errors.New("invalid provider configuration")

// ErrPlanMismatch: a plan names another installation, provider or Core URL
// than the base provider.json, a path outside the node root or another
// release's directory, a microsandbox home that is not one of the
// installation's stores, or a Docker image that is not one of the
// specification's identities.
var ErrPlanMismatch = errors.New("preparation plan does not match the node")

// ErrDrift: a final configuration differs from its plan in something other
// than the Docker image, or an existing plan or configuration differs from
// the one being written.
var ErrDrift = errors.New("provider configuration drifted from its plan")

// FieldError names the key that broke a rule, as a dotted path
// ("microsandbox.network.rules[2].port"), and why.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%v: %s", ErrMalformed, e.Reason)
	}
	return fmt.Sprintf("%v: %s: %s", ErrMalformed, e.Field, e.Reason)
}

// Unwrap lets callers test with errors.Is(err, ErrMalformed).
func (e *FieldError) Unwrap() error { return ErrMalformed }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}
