package strictjson

import (
	"encoding/json"
	"strconv"
)

// maxDepth bounds the nesting of arrays and objects. No record or answer
// comes near it; it keeps a hostile document from exhausting the stack.
const maxDepth = 512

// kind is the JSON type of a parsed value.
type kind uint8

const (
	kindNull kind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

func (k kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an array", "an object"}[k]
}

// value is one parsed JSON value: its type, the bytes it was written as,
// and its decoded content.
type value struct {
	kind    kind
	raw     []byte // the value as written, a slice of the document
	b       bool
	s       string // the unescaped string
	members []keyed
	elems   []*value
}

// keyed is one object member, in document order.
type keyed struct {
	key string
	val *value
}

// parser is a validating recursive-descent JSON parser (RFC 8259) that
// refuses duplicate keys as it reads each object. The document has been
// checked to be valid UTF-8 before it runs.
type parser struct {
	data []byte
	pos  int
}

// parse parses data as exactly one JSON value surrounded by white space.
func parse(data []byte) (*value, error) {
	p := &parser{data: data}
	p.space()
	v, err := p.value("", 0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.data) {
		return nil, refuse("", "data after the JSON value at byte "+strconv.Itoa(p.pos))
	}
	return v, nil
}

// syntax reports a syntax error. It is about the document, not the member
// being read, so it names no path.
func (p *parser) syntax() error {
	if p.pos >= len(p.data) {
		return refuse("", "unexpected end of the document")
	}
	return refuse("", "invalid JSON at byte "+strconv.Itoa(p.pos))
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value(path string, depth int) (*value, error) {
	if p.pos >= len(p.data) {
		return nil, p.syntax()
	}
	start := p.pos
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(path, depth+1)
	case c == '[':
		return p.array(path, depth+1)
	case c == '"':
		s, err := p.string()
		if err != nil {
			return nil, err
		}
		return &value{kind: kindString, raw: p.data[start:p.pos], s: s}, nil
	case c == '-' || '0' <= c && c <= '9':
		if !p.number() {
			return nil, p.syntax()
		}
		return &value{kind: kindNumber, raw: p.data[start:p.pos]}, nil
	case p.literal("true"):
		return &value{kind: kindBool, raw: p.data[start:p.pos], b: true}, nil
	case p.literal("false"):
		return &value{kind: kindBool, raw: p.data[start:p.pos]}, nil
	case p.literal("null"):
		return &value{kind: kindNull, raw: p.data[start:p.pos]}, nil
	}
	return nil, p.syntax()
}

func (p *parser) literal(word string) bool {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *parser) object(path string, depth int) (*value, error) {
	if depth > maxDepth {
		return nil, refuse(path, "nested deeper than "+strconv.Itoa(maxDepth))
	}
	v := &value{kind: kindObject}
	start := p.pos
	p.pos++ // {
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		v.raw = p.data[start:p.pos]
		return v, nil
	}
	var seen map[string]struct{}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.syntax()
		}
		key, err := p.string()
		if err != nil {
			return nil, err
		}
		if seen == nil {
			seen = make(map[string]struct{})
		}
		if _, dup := seen[key]; dup {
			return nil, refuse(member(path, key), "duplicate key")
		}
		seen[key] = struct{}{}
		p.space()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.syntax()
		}
		p.pos++
		p.space()
		val, err := p.value(member(path, key), depth)
		if err != nil {
			return nil, err
		}
		v.members = append(v.members, keyed{key, val})
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.syntax()
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.space()
		case '}':
			p.pos++
			v.raw = p.data[start:p.pos]
			return v, nil
		default:
			return nil, p.syntax()
		}
	}
}

func (p *parser) array(path string, depth int) (*value, error) {
	if depth > maxDepth {
		return nil, refuse(path, "nested deeper than "+strconv.Itoa(maxDepth))
	}
	v := &value{kind: kindArray}
	start := p.pos
	p.pos++ // [
	p.space()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		v.raw = p.data[start:p.pos]
		return v, nil
	}
	for {
		el, err := p.value(element(path, len(v.elems)), depth)
		if err != nil {
			return nil, err
		}
		v.elems = append(v.elems, el)
		p.space()
		if p.pos >= len(p.data) {
			return nil, p.syntax()
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.space()
		case ']':
			p.pos++
			v.raw = p.data[start:p.pos]
			return v, nil
		default:
			return nil, p.syntax()
		}
	}
}

// string reads a string at p.pos and returns it unescaped.
func (p *parser) string() (string, error) {
	start := p.pos
	p.pos++ // "
	escaped := false
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !escaped {
				return string(p.data[start+1 : p.pos-1]), nil
			}
			// The escapes are checked: encoding/json unescapes them the
			// same way it would for its own decoding.
			var s string
			if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
				return "", refuse("", "invalid string at byte "+strconv.Itoa(start))
			}
			return s, nil
		case c < 0x20:
			return "", refuse("", "control character in a string at byte "+strconv.Itoa(p.pos))
		case c == '\\':
			escaped = true
			p.pos++
			if p.pos >= len(p.data) {
				return "", p.syntax()
			}
			switch p.data[p.pos] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.pos++
			case 'u':
				p.pos++
				for i := 0; i < 4; i++ {
					if p.pos >= len(p.data) || !isHex(p.data[p.pos]) {
						return "", p.syntax()
					}
					p.pos++
				}
			default:
				return "", p.syntax()
			}
		default:
			p.pos++
		}
	}
	return "", p.syntax()
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// number reads -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at p.pos.
func (p *parser) number() bool {
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && '0' <= p.data[p.pos] && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return false
	}
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return false
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// isInteger reports whether a number was written as an integer literal:
// no fraction, no exponent, and not -0.
func isInteger(raw []byte) bool {
	for _, c := range raw {
		if c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return string(raw) != "-0"
}
