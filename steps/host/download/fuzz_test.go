package download

import "testing"

// FuzzContentRange: the parser never panics, and what it accepts is a
// range within its total.
func FuzzContentRange(f *testing.F) {
	for _, s := range []string{"bytes 0-9/10", "bytes 5-9/*", "bytes 9-5/10", "bytes */10", "bytes 1-2/3/4", "bytes 9223372036854775806-9223372036854775806/9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start, total, ok := parseContentRange(s)
		if !ok {
			return
		}
		if start < 0 || (total != -1 && total <= start) {
			t.Fatalf("%q accepted as start %d total %d", s, start, total)
		}
	})
}
