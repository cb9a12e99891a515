package lease

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// A field of a record with an exact key set: its JSON name, whether it must
// be present, and how its raw value is decoded.
type field struct {
	name     string
	required bool
	set      func(raw []byte) error
}

// decodeExact decodes data as one JSON object whose keys are exactly fields:
// every required key present, no unknown or duplicate key, no null value,
// nothing after the object.
func decodeExact(path string, data []byte, fields []field) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	bad := func(format string, args ...any) error {
		return refuse(path, "format", ErrMalformed, format, args...)
	}
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return bad("not a JSON object")
	}
	var seen uint64
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("invalid JSON")
		}
		key, _ := tok.(string)
		i := 0
		for i < len(fields) && fields[i].name != key {
			i++
		}
		if i == len(fields) {
			return bad("unknown key %q", truncate(key))
		}
		if seen&(1<<i) != 0 {
			return bad("duplicate key %q", key)
		}
		seen |= 1 << i
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return bad("invalid JSON")
		}
		if string(raw) == "null" {
			return bad("%s is null", key)
		}
		if err := fields[i].set(raw); err != nil {
			return bad("%s: %v", key, err)
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return bad("invalid JSON")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("data after the JSON object")
	}
	for i, f := range fields {
		if f.required && seen&(1<<i) == 0 {
			return bad("missing key %q", f.name)
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func setString(dst *string) func([]byte) error {
	return func(raw []byte) error {
		if len(raw) == 0 || raw[0] != '"' {
			return errors.New("not a string")
		}
		return json.Unmarshal(raw, dst)
	}
}

func setBool(dst *bool) func([]byte) error {
	return func(raw []byte) error {
		switch string(raw) {
		case "true":
			*dst = true
		case "false":
			*dst = false
		default:
			return errors.New("not a boolean")
		}
		return nil
	}
}

// setInt accepts a JSON integer only: no fraction, exponent, sign on zero
// or quoted number.
func setInt(dst *int64) func([]byte) error {
	return func(raw []byte) error {
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || strconv.FormatInt(n, 10) != string(raw) {
			return errors.New("not an integer")
		}
		*dst = n
		return nil
	}
}

func setUint(dst *uint64) func([]byte) error {
	return func(raw []byte) error {
		n, err := strconv.ParseUint(string(raw), 10, 64)
		if err != nil || strconv.FormatUint(n, 10) != string(raw) {
			return errors.New("not a non-negative integer")
		}
		*dst = n
		return nil
	}
}

func setObject(dst *json.RawMessage) func([]byte) error {
	return func(raw []byte) error {
		if len(raw) == 0 || raw[0] != '{' {
			return errors.New("not an object")
		}
		*dst = append(json.RawMessage(nil), raw...)
		return nil
	}
}

// identityFields are the three marker-identity keys every record carries.
func identityFields(id *Identity) []field {
	return []field{
		{"installation_id", true, setString(&id.InstallationID)},
		{"generation", true, setInt(&id.Generation)},
		{"specification_digest", true, setString(&id.SpecificationDigest)},
	}
}

// marshalRecord renders a record the way the node's records are written:
// sorted keys, two-space indent, trailing newline.
func marshalRecord(v map[string]any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return append(data, '\n'), nil
}

func (id Identity) fields() map[string]any {
	return map[string]any{
		"installation_id":      id.InstallationID,
		"generation":           id.Generation,
		"specification_digest": id.SpecificationDigest,
	}
}

// withDir opens the generations directory for one operation.
func withDir(dir string, uid int, fn func(*dirHandle) error) error {
	d, err := openDir(dir, uid)
	if err != nil {
		return err
	}
	defer d.close()
	return fn(d)
}

// readKind reads and parses one record and checks that it names the
// generation of its file name.
func readKind[T any](d *dirHandle, name string, g int64, limit int64, parse func(string, []byte) (T, error), identity func(T) Identity) (T, error) {
	var zero T
	path := d.join(name)
	data, _, err := d.readRecord(name, limit)
	if err != nil {
		return zero, err
	}
	v, err := parse(path, data)
	if err != nil {
		return zero, err
	}
	if got := identity(v).Generation; got != g {
		return zero, refuse(path, "identity", ErrIdentityMismatch, "record names generation %d", got)
	}
	return v, nil
}
