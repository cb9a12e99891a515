package strictjson

import (
	"errors"
	"strconv"
	"strings"
)

// ErrInvalid: a document does not follow the strict rules or does not fit
// its target. Every decoding error matches it.
var ErrInvalid = errors.New("invalid JSON document")

// ErrTooLarge: a document is larger than its Format's MaxSize. Errors
// matching it also match ErrInvalid.
var ErrTooLarge = errors.New("JSON document too large")

// Error is a refused document: where (a key path such as
// "specification.resources.cpus" or "rules[2]", "" for the whole document)
// and why. It never quotes a value.
type Error struct {
	Path   string
	Reason string
	large  bool
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Unwrap makes the error match ErrInvalid, and ErrTooLarge for a document
// over the size bound.
func (e *Error) Unwrap() []error {
	if e.large {
		return []error{ErrInvalid, ErrTooLarge}
	}
	return []error{ErrInvalid}
}

func refuse(path, reason string) *Error { return &Error{Path: path, Reason: reason} }

// maxKeyShown bounds how much of a key an error repeats: keys come from the
// document, which may be hostile.
const maxKeyShown = 64

// member appends key to path: bare when it is a plain name, quoted (and
// shortened) otherwise.
func member(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key) && plain; i++ {
		c := key[i]
		plain = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '/' || (c == '.' && i > 0)
	}
	shown := key
	if len(shown) > maxKeyShown {
		shown = strings.ToValidUTF8(shown[:maxKeyShown], "") + "…"
		plain = false
	}
	if !plain {
		shown = strconv.Quote(shown)
	}
	if path == "" {
		return shown
	}
	return path + "." + shown
}

func element(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
