package ident

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// InstallationID is an installation's id, a canonical UUID
// (CanonicalUUID). It is a defined string type so that its JSON and text
// encodings are the string's, byte for byte.
//
// A value made by ParseInstallationID is canonical. Decoding JSON does not
// check it: each file and answer that holds an id (the host record,
// bookkeeping, a journal's binding, the generation identity, Core's
// configuration) is refused by its reader with the reader's own message,
// in the reader's own order of checks, and a reader that refuses a
// non-canonical id does so with Valid before the value names a path. Code
// past those readers takes the typed value as it is; a conversion
// InstallationID(s) outside this package and tests says in a comment why
// s is known to be canonical.
type InstallationID string

// ParseInstallationID is the one validation of an installation id typed or
// read as a string: s must be a canonical UUID. Its error is an
// *InstallationIDError.
func ParseInstallationID(s string) (InstallationID, error) {
	if !CanonicalUUID(s) {
		return "", &InstallationIDError{Got: s}
	}
	return InstallationID(s), nil
}

// String is the id as it is written in paths, unit names and messages.
func (id InstallationID) String() string { return string(id) }

// Valid reports whether id is a canonical UUID: always true for a value
// ParseInstallationID made, checked by the readers of decoded values.
func (id InstallationID) Valid() bool { return CanonicalUUID(string(id)) }

// InstallationIDError is ParseInstallationID's refusal. Got is the string
// refused, as it was; the message shows it clipped to 64 bytes and quoted
// as Go quotes a string, so that it is safe for a terminal (the command
// line shows it with its own sanitizer: Clip and UUIDRule).
type InstallationIDError struct{ Got string }

// UUIDRule is what a canonical installation id is, for a refusal.
const UUIDRule = "not a canonical UUID (lowercase, 8-4-4-4-12, like 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c)"

func (e *InstallationIDError) Error() string {
	return fmt.Sprintf("%s: %s", strconv.Quote(Clip(e.Got, 64)), UUIDRule)
}

// Clip is s cut to at most max bytes at a character boundary, "…" marking
// the cut.
func Clip(s string, max int) string {
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
