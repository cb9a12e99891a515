package ident

import "testing"

func TestCanonicalUUID(t *testing.T) {
	for s, want := range map[string]bool{
		"0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c":   true,
		"0B4A2C6E-3F1D-4E5A-9B7C-8D6E5F4A3B2C":   false,
		"0b4a2c6e3f1d4e5a9b7c8d6e5f4a3b2c":       false,
		"{0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2c}": false,
		"0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2":    false,
		"0b4a2c6e_3f1d-4e5a-9b7c-8d6e5f4a3b2c":   false,
		"0b4a2c6e-3f1d-4e5a-9b7c-8d6e5f4a3b2g":   false,
		"":                                       false,
	} {
		if got := CanonicalUUID(s); got != want {
			t.Errorf("CanonicalUUID(%q) = %v", s, got)
		}
	}
}

func TestLowerHex(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want bool
	}{
		{"00ff", 4, true}, {"00FF", 4, false}, {"00f", 4, false}, {"00fff", 4, false}, {"0g00", 4, false}, {"", 0, true},
	} {
		if got := LowerHex(c.s, c.n); got != c.want {
			t.Errorf("LowerHex(%q, %d) = %v", c.s, c.n, got)
		}
	}
}
