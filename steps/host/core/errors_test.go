package core

import (
	"errors"
	"strings"
	"testing"
)

// TestStatusError: one mapping of Core's refusals, whose hint names the
// next step for the credential's holder; only a token's 401 is
// ErrTokenRejected.
func TestStatusError(t *testing.T) {
	for _, tc := range []struct {
		name         string
		err          StatusError
		want         string
		tokenRefused bool
	}{
		{"node 401", StatusError{Code: 401}, "(HTTP 401): Core no longer accepts this node's credential", false},
		{"token 401", StatusError{Code: 401, Token: true}, "(HTTP 401): the command expired or was already used; generate a new command in Web", true},
		{"node 404", StatusError{Code: 404}, "(HTTP 404): the route /api/v1 must reach Core, not Web", false},
		{"token 404", StatusError{Code: 404, Token: true}, "(HTTP 404): the route /api/v1 must reach Core, not Web", false},
		{"node 409", StatusError{Code: 409}, "(HTTP 409): Core no longer serves this generation to the node (the deployment is resetting or moved on, or conflicts with the node's retained specification)", false},
		{"token 409", StatusError{Code: 409, Token: true}, "(HTTP 409): the deployment is resetting or its specification conflicts; try again later", false},
		{"token 503", StatusError{Code: 503, Token: true}, "Core rejected the node configuration read (HTTP 503)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := error(&tc.err)
			if !strings.HasPrefix(err.Error(), ErrRejected.Error()) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Error() = %q, want it to hold %q", err, tc.want)
			}
			if !errors.Is(err, ErrRejected) {
				t.Errorf("%v is not ErrRejected", err)
			}
			if got := errors.Is(err, ErrTokenRejected); got != tc.tokenRefused {
				t.Errorf("errors.Is(%v, ErrTokenRejected) = %v, want %v", err, got, tc.tokenRefused)
			}
		})
	}
}
