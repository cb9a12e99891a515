package strictjson

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Format is one document format's decoding rules: its size bound and
// whether it may carry keys the reader does not know. Declare one per
// format, next to the format's type.
type Format struct {
	// MaxSize is the largest document accepted, in bytes. It must be
	// positive.
	MaxSize int
	// AllowUnknownKeys lets objects decoded into structs carry keys that
	// name no field; they are skipped (after their own checks). Only for
	// formats someone else extends: Core's answers, a tool's output.
	AllowUnknownKeys bool
}

// Decode decodes data, one JSON document, into v (a non-nil pointer) by the
// package's rules. *v is replaced only on success; nothing in it is merged.
// A refused document returns an *Error matching ErrInvalid.
func (f Format) Decode(data []byte, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("strictjson: decode into %T: not a non-nil pointer", v)
	}
	if f.MaxSize <= 0 {
		return errors.New("strictjson: the format has no size bound")
	}
	if len(data) > f.MaxSize {
		return &Error{Reason: "larger than " + strconv.Itoa(f.MaxSize) + " bytes", large: true}
	}
	if !utf8.Valid(data) {
		return refuse("", "not valid UTF-8")
	}
	parsed, err := parse(data)
	if err != nil {
		return err
	}
	d := decoder{allowUnknown: f.AllowUnknownKeys}
	out := reflect.New(rv.Elem().Type()).Elem()
	if err := d.store(parsed, out, ""); err != nil {
		return err
	}
	rv.Elem().Set(out)
	return nil
}

// Read reads one document from r, at most MaxSize bytes, and decodes it
// into v like Decode. A read error is returned wrapped, unlike a refusal.
func (f Format) Read(r io.Reader, v any) error {
	if f.MaxSize <= 0 {
		return errors.New("strictjson: the format has no size bound")
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(f.MaxSize)+1))
	if err != nil {
		return fmt.Errorf("read JSON document: %w", err)
	}
	return f.Decode(data, v)
}
