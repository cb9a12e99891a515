package core

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/trust"
)

// ErrRejected: Core answered the configuration read with an HTTP status
// other than 200 (*StatusError).
var ErrRejected = errors.New("Core rejected the node configuration read")

// ErrTokenRejected: Core answered 401 to the enrollment token (expired, or
// already used). A *StatusError of a token client with code 401 is it.
var ErrTokenRejected = errors.New("Core rejected the enrollment token")

// ErrAnswer: Core's configuration answer is not a valid configuration for
// this node and generation.
var ErrAnswer = errors.New("invalid configuration from Core")

// StatusError is a refused configuration read. The response body is never
// kept.
type StatusError struct {
	Code int
	// Token: the read carried an enrollment token, not a node credential.
	Token bool
}

func (e *StatusError) Error() string {
	hint := ""
	switch e.Code {
	case http.StatusUnauthorized:
		hint = ": Core no longer accepts this node's credential; remove the node and install it again, or uninstall it with --uninstall"
		if e.Token {
			hint = ": the command expired or was already used; generate a new command in Web"
		}
	case http.StatusNotFound:
		hint = ": the route /api/v1 must reach Core, not Web; check the reverse proxy"
	case http.StatusConflict:
		// With the node's credential (a generation named): Core no
		// longer serves that generation to the node, which waiting does
		// not change (CONTRACT §6.1: 409 sandbox_specification_mismatch).
		hint = ": Core no longer serves this generation to the node (the deployment is resetting or moved on, or conflicts with the node's retained specification)"
		if e.Token {
			hint = ": the deployment is resetting or its specification conflicts; try again later"
		}
	}
	return fmt.Sprintf("%v (HTTP %d)%s", ErrRejected, e.Code, hint)
}

// Unwrap lets callers test with errors.Is(err, ErrRejected).
func (e *StatusError) Unwrap() error { return ErrRejected }

// Is lets callers test a token's refusal with errors.Is(err,
// ErrTokenRejected).
func (e *StatusError) Is(target error) bool {
	return target == ErrTokenRejected && e.Token && e.Code == http.StatusUnauthorized
}

// RequestError is Identity's error when its request could not be built:
// nothing was sent.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// TransportReason is a transport error without the URL (which carries the
// query) and without anything a proxy setting holds.
func TransportReason(err error) string { return transportReason(err, false) }

// transportReason is TransportReason; for a token client an untrusted
// certificate names --core-ca, the flag that fixes it.
func transportReason(err error, token bool) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if clock := trust.Explain(err, time.Now()); clock != nil {
		return clock.Error()
	}
	var ce *tls.CertificateVerificationError
	if errors.As(err, &ce) {
		if token {
			return "its TLS certificate is not trusted; give its CA with --core-ca"
		}
		return "Core's TLS certificate is not trusted"
	}
	return err.Error()
}
