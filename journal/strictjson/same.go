package strictjson

import (
	"errors"
	"math/big"
	"strconv"
	"unicode/utf8"
)

// Same reports whether a and b, two documents of this format, hold the same
// JSON value, whatever their layout: white space, the order of an object's
// members and the escapes of a string (Python's json.dumps writes "é" as
// "\u00e9") do not matter; numbers compare by their exact decimal value (1
// and 1.0 and 10e-1 are equal). Both documents must pass the package's text
// rules (size, UTF-8, one value, no duplicate key); a document that does
// not is an *Error matching ErrInvalid, never "the same".
//
// The node's records are written by the installer and by the platform's own
// programs in different layouts (indented or on one line); they are
// compared with Same, never byte for byte.
func (f Format) Same(a, b []byte) (bool, error) {
	va, err := f.parseDoc(a)
	if err != nil {
		return false, err
	}
	vb, err := f.parseDoc(b)
	if err != nil {
		return false, err
	}
	return sameValue(va, vb), nil
}

func (f Format) parseDoc(data []byte) (*value, error) {
	if f.MaxSize <= 0 {
		return nil, errors.New("strictjson: the format has no size bound")
	}
	if len(data) > f.MaxSize {
		return nil, &Error{Reason: "larger than " + strconv.Itoa(f.MaxSize) + " bytes", large: true}
	}
	if !utf8.Valid(data) {
		return nil, refuse("", "not valid UTF-8")
	}
	return parse(data)
}

func sameValue(a, b *value) bool {
	if a.kind != b.kind {
		return false
	}
	switch a.kind {
	case kindNull:
		return true
	case kindBool:
		return a.b == b.b
	case kindString:
		return a.s == b.s
	case kindNumber:
		return sameNumber(a.raw, b.raw)
	case kindArray:
		if len(a.elems) != len(b.elems) {
			return false
		}
		for i := range a.elems {
			if !sameValue(a.elems[i], b.elems[i]) {
				return false
			}
		}
		return true
	}
	if len(a.members) != len(b.members) {
		return false
	}
	// Keys are unique within an object (the parser refuses duplicates).
	other := make(map[string]*value, len(b.members))
	for _, kv := range b.members {
		other[kv.key] = kv.val
	}
	for _, kv := range a.members {
		w, ok := other[kv.key]
		if !ok || !sameValue(kv.val, w) {
			return false
		}
	}
	return true
}

// sameNumber compares two JSON number literals by exact value.
func sameNumber(a, b []byte) bool {
	if string(a) == string(b) {
		return true
	}
	// An exponent beyond this is no record's; such literals are equal only
	// when written alike (above), which keeps big.Rat from building huge
	// values out of a short hostile literal.
	if hugeExponent(a) || hugeExponent(b) {
		return false
	}
	x, okx := new(big.Rat).SetString(string(a))
	y, oky := new(big.Rat).SetString(string(b))
	return okx && oky && x.Cmp(y) == 0
}

// hugeExponent reports whether a number literal carries an exponent of more
// than four digits.
func hugeExponent(lit []byte) bool {
	for i, c := range lit {
		if c == 'e' || c == 'E' {
			digits := 0
			for _, d := range lit[i+1:] {
				if d >= '0' && d <= '9' {
					digits++
				}
			}
			return digits > 4
		}
	}
	return false
}
