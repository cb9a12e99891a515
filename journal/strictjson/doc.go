// Package strictjson is the one JSON decoder for every record the installer
// reads from a file and every answer it reads from Core or a local tool.
//
// encoding/json is lenient on purpose: it matches keys without regard to
// case, keeps the last of two equal keys, ignores unknown keys, turns 1.0
// into an integer field's error only sometimes, replaces invalid UTF-8 and
// lets null through as "leave unchanged". A record that two readers can
// read differently is a record an attacker (or a bug) can make mean two
// things. A Format decodes one document into a Go value by these rules:
//
//   - Size: the document is at most Format.MaxSize bytes. A Format without a
//     bound decodes nothing.
//   - Text: the whole document is valid UTF-8 and exactly one JSON value,
//     with only white space around it. Anything encoding/json rejects is
//     rejected.
//   - Keys: an object never holds the same key twice, at any depth, whatever
//     the target (struct, map, json.RawMessage or ignored). Keys compare
//     after unescaping, so "\u0061" and "a" are the same key.
//   - Struct fields match their json tag name (or Go name) exactly, with
//     case. A field tagged omitempty or omitzero may be absent; every other
//     field must be present. A key that names no field is refused unless
//     the Format says AllowUnknownKeys (formats owned by someone else that
//     grow new keys: Core answers, tool output); even then a key that
//     differs from a field's name only in case is refused, because
//     encoding/json would have matched it.
//   - Types: strings into strings, true/false into bools, and integers into
//     integer fields only as integer literals (no fraction, no exponent, no
//     -0, no quotes), range-checked against the Go type. Floats take any
//     number that fits. null is accepted only inside interface values
//     (any); everywhere else it is refused. A field that may be left out
//     is left out, not null; a pointer field (tagged omitempty) tells an
//     absent key (nil) from a present zero value.
//   - Arrays into Go arrays must have exactly the array's length.
//   - json.RawMessage keeps the value's bytes as written (after the checks
//     above on its whole subtree); other json.Unmarshaler and (for string
//     values) encoding.TextUnmarshaler types decode themselves.
//
// Errors are *Error values matching ErrInvalid. They name the key path and
// what is wrong but never quote a value, because some documents (the node
// identity) hold secrets. The caller wraps them in its own format's error.
//
// What a format allows beyond its shape (a 40-hex commit, a positive size,
// an https origin) is checked by the format's own package after decoding.
package strictjson
