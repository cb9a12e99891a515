package noderoot

import (
	"errors"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/workflow"
)

// ErrInstallLocked: another process holds the node's install.lock.
var ErrInstallLocked = errors.New("Another node installation is running")

// ErrSpecification: Core's specification for the generation is not the
// one the node asked for (digest), or a retained configuration holds a
// different specification.
var ErrSpecification = errors.New("specification differs")

// ErrConflict: a file exists with other bytes than its release declares,
// or is not a private regular file. Nothing is replaced.
var ErrConflict = errors.New("file exists with conflicting bytes")

// ErrCollecting: the generation has a collection journal; it cannot be
// prepared or repaired.
var ErrCollecting = errors.New("generation is being collected")

// ErrReferenced: collection found that what it would remove is still
// referenced, or could not prove that it is not (an unreadable retained
// configuration).
var ErrReferenced = errors.New("still referenced")

// ErrUnprovenFile: collection found a file to remove whose hash no local
// record proves (unknown hash, changed bytes, a link or a non-regular
// file). Nothing was removed.
var ErrUnprovenFile = errors.New("file to remove is not proven private")

// ArtifactError is a failure to obtain or prove the bytes of a release: an
// artifact or metadata transfer (download.ErrTransfer), a checksum or size
// mismatch of downloaded bytes, release metadata that does not verify, a
// release that is not the specification's, or an image archive whose
// identity is not the release's. The generation helper exits 65 for it.
type ArtifactError struct{ Err error }

func (e *ArtifactError) Error() string { return e.Err.Error() }

// Unwrap returns the cause.
func (e *ArtifactError) Unwrap() error { return e.Err }

// Class is the journal's error class.
func (e *ArtifactError) Class() string { return "artifact" }

// Artifact wraps err as an *ArtifactError (nil stays nil; an error that
// already holds one stays as it is).
func Artifact(err error) error {
	if err == nil {
		return nil
	}
	var ae *ArtifactError
	if errors.As(err, &ae) {
		return err
	}
	return &ArtifactError{Err: err}
}

// IsArtifactFailure reports whether err is an artifact transfer, checksum
// or provenance failure: an *ArtifactError, or a download transfer error
// anywhere in its chain.
func IsArtifactFailure(err error) bool {
	var ae *ArtifactError
	return errors.As(err, &ae) || errors.Is(err, download.ErrTransfer)
}

// Refusal is err refused with the operator's next step hint ("" for
// none): a *workflow.Refusal, the one refusal type, a refusal that
// changed nothing.
func Refusal(hint string, err error) error { return &workflow.Refusal{Err: err, Hint: hint} }

// Refusef is a Refusal of sentinel with a formatted detail.
func Refusef(sentinel error, hint, format string, args ...any) error {
	return &workflow.Refusal{Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...)), Hint: hint}
}
