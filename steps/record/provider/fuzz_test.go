package provider

import (
	"testing"
)

// FuzzParse runs its committed seeds (testdata/fuzz/FuzzParse/) in every go
// test run; go test -fuzz=FuzzParse explores further. The parser must never
// panic, and what it accepts must survive Marshal and Parse unchanged, byte
// for byte.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("accepted configuration does not marshal: %v", err)
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("marshalled configuration does not parse: %v\n%s", err, out)
		}
		again, err := back.Marshal()
		if err != nil || string(again) != string(out) {
			t.Fatalf("round trip changed the configuration:\n%s\n%s", out, again)
		}
	})
}
