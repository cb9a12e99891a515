package download

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ErrTransfer matches every failure to obtain verified bytes over the
// network: transport errors after the last attempt, refused statuses and
// redirects, stalls, oversized metadata, size and checksum mismatches.
// The generation helper exits 65 when errors.Is(err, ErrTransfer).
var ErrTransfer = errors.New("transfer failed")

// ErrChecksum means the received bytes have another sha256 than declared.
// The part file was discarded. It is also a transfer error.
var ErrChecksum = errors.New("checksum mismatch")

// ErrSize means the server's file has another size than declared. The part
// file was discarded. It is also a transfer error.
var ErrSize = errors.New("size mismatch")

// ErrStalled means less than the stall threshold arrived within the stall
// window; the part file was kept so that a rerun resumes. It is also a
// transfer error.
var ErrStalled = errors.New("transfer stalled")

// ErrRedirect means a redirect the request may not follow: any redirect of
// a metadata request, or an artifact redirect to a non-HTTPS URL or a URL
// with credentials. It is also a transfer error.
var ErrRedirect = errors.New("redirect refused")

// ErrTooLarge means a metadata response exceeded its limit. It is also a
// transfer error.
var ErrTooLarge = errors.New("response too large")

// ErrHTTPStatus matches a *StatusError: a status that ended the request.
var ErrHTTPStatus = errors.New("unexpected HTTP status")

// ErrTargetConflict means the target already exists and does not verify.
// Nothing was changed; it is not a transfer error.
var ErrTargetConflict = errors.New("file exists with other contents")

// ErrNoSpace means a file system has less free space than needed
// (*SpaceError). It is not a transfer error.
var ErrNoSpace = errors.New("not enough free space")

// TransferError reports a failure to obtain a file's verified bytes. Op is
// "download" or "fetch", File names the file (an artifact's name, a
// metadata URL without query).
type TransferError struct {
	Op   string
	File string
	Err  error
}

func (e *TransferError) Error() string { return e.Op + " " + e.File + ": " + e.Err.Error() }

// Unwrap returns the cause, so errors.Is finds ErrChecksum and the others.
func (e *TransferError) Unwrap() error { return e.Err }

// Is makes every TransferError match ErrTransfer.
func (e *TransferError) Is(target error) bool { return target == ErrTransfer }

// StatusError is an HTTP status that ended a request. The response body is
// never part of it.
type StatusError struct {
	Code int
	URL  string // the request's URL without credentials or query
}

func (e *StatusError) Error() string {
	if e.URL == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d from %s", e.Code, e.URL)
}

// Is makes every StatusError match ErrHTTPStatus.
func (e *StatusError) Is(target error) bool { return target == ErrHTTPStatus }

// ConflictError names a target that exists with other bytes.
type ConflictError struct {
	Path   string
	Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s already exists and %s; it was not changed", e.Path, e.Reason)
}

// Unwrap lets callers test with errors.Is(err, ErrTargetConflict).
func (e *ConflictError) Unwrap() error { return ErrTargetConflict }

// retryable marks a failure that a later attempt may not repeat.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

func isRetryable(err error) bool {
	var r retryable
	return errors.As(err, &r)
}

// RetryableStatus reports whether an HTTP status is worth another attempt:
// the installer's one list, for downloads and for Core (steps/host/core).
func RetryableStatus(code int) bool {
	switch code {
	case 408, 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// displayURL is u for messages: no credentials, no query, no fragment.
func displayURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	c.Fragment = ""
	c.RawFragment = ""
	return c.String()
}

// redactedError replaces secrets in a message while keeping the chain for
// errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// scrub returns err with every secret replaced in its message.
func scrub(err error, secrets []string) error {
	if err == nil || len(secrets) == 0 {
		return err
	}
	msg := err.Error()
	out := msg
	for _, s := range secrets {
		if s != "" {
			out = strings.ReplaceAll(out, s, "xxxxx")
		}
	}
	if out == msg {
		return err
	}
	return &redactedError{msg: out, err: err}
}
