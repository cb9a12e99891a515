package provider

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"
)

// members is a JSON object decoded key by key, remembering which keys were
// consumed so that leftovers are refused as unknown.
type members struct {
	path string
	m    map[string]json.RawMessage
	used map[string]bool
}

// decodeObject decodes raw as exactly one JSON object: no duplicate keys, no
// trailing data, valid UTF-8.
func decodeObject(path string, raw []byte) (*members, error) {
	if !utf8.Valid(raw) {
		return nil, fieldErr(path, "not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, fieldErr(path, "must be a JSON object")
	}
	o := &members{path: path, m: map[string]json.RawMessage{}, used: map[string]bool{}}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fieldErr(path, "invalid JSON")
		}
		key, _ := tok.(string)
		if _, dup := o.m[key]; dup {
			return nil, fieldErr(join(path, key), "duplicate key")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fieldErr(join(path, key), "invalid JSON")
		}
		o.m[key] = v
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, fieldErr(path, "invalid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fieldErr(path, "data after the JSON object")
	}
	return o, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// raw returns the value of a required key.
func (o *members) raw(key string) (json.RawMessage, error) {
	v, ok := o.m[key]
	if !ok {
		return nil, fieldErr(join(o.path, key), "missing")
	}
	o.used[key] = true
	if string(v) == "null" {
		return nil, fieldErr(join(o.path, key), "is null")
	}
	return v, nil
}

func (o *members) has(key string) bool { _, ok := o.m[key]; return ok }

func (o *members) str(key string) (string, error) {
	v, err := o.raw(key)
	if err != nil {
		return "", err
	}
	if len(v) == 0 || v[0] != '"' {
		return "", fieldErr(join(o.path, key), "must be a string")
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fieldErr(join(o.path, key), "malformed string")
	}
	return s, nil
}

// integer accepts a JSON integer literal only: no fraction, exponent,
// leading zero, boolean or string.
func (o *members) integer(key string, min, max int64) (int64, error) {
	v, err := o.raw(key)
	if err != nil {
		return 0, err
	}
	n, perr := strconv.ParseInt(string(v), 10, 64)
	if perr != nil || strconv.FormatInt(n, 10) != string(v) {
		return 0, fieldErr(join(o.path, key), "must be an integer")
	}
	if n < min || n > max {
		return 0, fieldErr(join(o.path, key), "%d is outside [%d, %d]", n, min, max)
	}
	return n, nil
}

func (o *members) boolean(key string) (bool, error) {
	v, err := o.raw(key)
	if err != nil {
		return false, err
	}
	switch string(v) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fieldErr(join(o.path, key), "must be a boolean")
}

func (o *members) object(key string) (*members, error) {
	v, err := o.raw(key)
	if err != nil {
		return nil, err
	}
	return decodeObject(join(o.path, key), v)
}

func (o *members) array(key string) ([]json.RawMessage, error) {
	v, err := o.raw(key)
	if err != nil {
		return nil, err
	}
	if len(v) == 0 || v[0] != '[' {
		return nil, fieldErr(join(o.path, key), "must be an array")
	}
	var out []json.RawMessage
	if err := json.Unmarshal(v, &out); err != nil {
		return nil, fieldErr(join(o.path, key), "malformed array")
	}
	return out, nil
}

// done refuses every key that was not consumed.
func (o *members) done() error {
	for k := range o.m {
		if !o.used[k] {
			return fieldErr(join(o.path, k), "unknown key")
		}
	}
	return nil
}
