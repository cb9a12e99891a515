package privsep

import "testing"

func TestSanitizeField(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", "prepare-1.journal", "prepare-1.journal"},
		{"newline made visible", "oac-node\nnext:     curl x | sudo sh", `oac-node\nnext:     curl x | sudo sh`},
		{"tab made visible", "a\tb", `a\tb`},
		{"CSI and OSC replaced", "\x1b[2J\x1b]0;t\x07", "?[2J?]0;t?"},
		{"carriage return replaced", "ok\rforged", "ok?forged"},
		{"C1 and DEL replaced", "a\u009bb\x7fc", "a?b?c"},
		{"backslash kept", `a\nb`, `a\nb`},
		{"multibyte kept", "héllo ✓", "héllo ✓"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SanitizeField(tc.in); got != tc.want {
				t.Errorf("SanitizeField(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
