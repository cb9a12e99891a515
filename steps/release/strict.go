package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/openagentcore/oac-node-install/steps/ident"
)

// The helpers below decode JSON values by their exact key and exact type.
// encoding/json alone would match keys case-insensitively and accept 1.0 or
// true where an integer belongs; the platform's Python reader does neither.

// jsonKind names the JSON type of a raw value, for error messages.
func jsonKind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// object decodes raw as a JSON object into its members.
func object(raw json.RawMessage) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("must be an object, not %s", jsonKind(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("malformed object: %v", err)
	}
	return m, nil
}

// str decodes raw as a JSON string.
func str(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("must be a string, not %s", jsonKind(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("malformed string: %v", err)
	}
	return s, nil
}

// integer decodes raw as a JSON integer literal (no fraction, no exponent)
// within [min, max].
func integer(raw json.RawMessage, min, max int64) (int64, error) {
	raw = bytes.TrimSpace(raw)
	if jsonKind(raw) != "a number" {
		return 0, fmt.Errorf("must be an integer, not %s", jsonKind(raw))
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 {
		return 0, fmt.Errorf("must be an integer")
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("must be an integer, not %s", raw)
		}
	}
	if len(digits) > 1 && digits[0] == '0' {
		return 0, fmt.Errorf("malformed number %s", raw)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < min || n > max {
		return 0, fmt.Errorf("%s is outside [%d, %d]", raw, min, max)
	}
	return n, nil
}

// IsCommit reports whether s is a source commit: 40 lowercase hex digits.
func IsCommit(s string) bool { return ident.LowerHex(s, 40) }

// IsSHA256 reports whether s is a sha256 in 64 lowercase hex digits.
func IsSHA256(s string) bool { return ident.LowerHex(s, 64) }

// IsDigest reports whether s is an image digest: "sha256:" and 64 lowercase
// hex digits.
func IsDigest(s string) bool {
	const p = "sha256:"
	return len(s) > len(p) && s[:len(p)] == p && ident.LowerHex(s[len(p):], 64)
}

// IsRuntimeRef reports whether s is a microsandbox Runtime reference:
// "oac-runtime@sha256:" and 64 lowercase hex digits.
func IsRuntimeRef(s string) bool {
	const p = "oac-runtime@"
	return len(s) > len(p) && s[:len(p)] == p && IsDigest(s[len(p):])
}
