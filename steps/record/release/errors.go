package release

import (
	"errors"
	"fmt"
)

// ErrTooLarge is returned when a metadata file (manifest.json, SHA256SUMS) is
// larger than MaxMetadataSize.
var ErrTooLarge = errors.New("metadata file exceeds 1 MiB")

// ErrInvalidManifest is the kind of every *FieldError about manifest.json.
var ErrInvalidManifest = errors.New("invalid release manifest")

// ErrInvalidSums is the kind of every *FieldError about SHA256SUMS.
var ErrInvalidSums = errors.New("invalid SHA256SUMS")

// ErrInvalidSpecification is the kind of every *FieldError about a
// deployment specification.
var ErrInvalidSpecification = errors.New("invalid deployment specification")

// ErrNotListed is returned when a file that must be covered by SHA256SUMS
// (manifest.json, runtime/seccomp.json) has no line there.
var ErrNotListed = errors.New("file not listed in SHA256SUMS")

// ErrChecksumMismatch is returned when bytes do not have the sha256 (or size)
// their metadata declares.
var ErrChecksumMismatch = errors.New("checksum mismatch")

// ErrUnknownProvider is returned for a provider name outside the catalog.
var ErrUnknownProvider = errors.New("unknown sandbox provider")

// ErrReleaseMismatch is returned by MatchRelease when the specification's
// runtime is not the one the release manifest describes.
var ErrReleaseMismatch = errors.New("specification runtime does not match the release")

// FieldError says which field of which document broke which rule. Kind is
// one of ErrInvalidManifest, ErrInvalidSums or ErrInvalidSpecification and
// is what errors.Is matches.
type FieldError struct {
	Kind   error
	Field  string // JSON path such as "artifacts.images/runtime.tar.gz.size", or "line 3"
	Reason string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s: %s", e.Kind, e.Field, e.Reason)
}

// Unwrap returns Kind.
func (e *FieldError) Unwrap() error { return e.Kind }

func manifestErr(field, format string, args ...any) error {
	return &FieldError{Kind: ErrInvalidManifest, Field: field, Reason: fmt.Sprintf(format, args...)}
}

func sumsErr(field, format string, args ...any) error {
	return &FieldError{Kind: ErrInvalidSums, Field: field, Reason: fmt.Sprintf(format, args...)}
}

func specErr(field, format string, args ...any) error {
	return &FieldError{Kind: ErrInvalidSpecification, Field: field, Reason: fmt.Sprintf(format, args...)}
}
