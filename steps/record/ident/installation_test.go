package ident

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestParseInstallationID(t *testing.T) {
	const good = "0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c"
	id, err := ParseInstallationID(good)
	if err != nil || id.String() != good || !id.Valid() {
		t.Fatalf("ParseInstallationID(%q) = %q, %v", good, id, err)
	}
	for name, c := range map[string]struct{ in, shown string }{
		"upper":              {strings.ToUpper(good), strings.ToUpper(good)},
		"empty":              {"", ""},
		"control":            {"a\x1b[2Jb\nc", "a\x1b[2Jb\nc"},
		"long":               {strings.Repeat("x", 70), strings.Repeat("x", 64) + "…"},
		"cut at a character": {strings.Repeat("x", 63) + "é", strings.Repeat("x", 63) + "…"},
	} {
		t.Run(name, func(t *testing.T) {
			id, err := ParseInstallationID(c.in)
			var e *InstallationIDError
			if id != "" || !errors.As(err, &e) || e.Got != c.in {
				t.Fatalf("ParseInstallationID(%q) = %q, %v", c.in, id, err)
			}
			want := strconv.Quote(c.shown)[1 : len(strconv.Quote(c.shown))-1]
			want = `"` + want + `": not a canonical UUID (lowercase, 8-4-4-4-12, like 0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c)`
			if err.Error() != want {
				t.Errorf("message %q, want %q", err, want)
			}
		})
	}
}

// The typed id encodes and decodes as the plain string, byte for byte, and
// decoding does not validate (each reader checks with its own message).
func TestInstallationIDJSON(t *testing.T) {
	type doc struct {
		ID InstallationID `json:"installation_id"`
	}
	in := `{"installation_id":"0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c"}`
	var d doc
	if err := json.Unmarshal([]byte(in), &d); err != nil {
		t.Fatal(err)
	}
	if out, _ := json.Marshal(d); string(out) != in {
		t.Errorf("round trip %s", out)
	}
	if err := json.Unmarshal([]byte(`{"installation_id":"NOT"}`), &d); err != nil || d.ID.Valid() {
		t.Errorf("decode of a non-canonical id: %q, %v", d.ID, err)
	}
}
