package download

import (
	"strings"
	"testing"
)

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

// FuzzNoProxy: parsing and matching never panic, "*" always matches and
// an empty list never does.
func FuzzNoProxy(f *testing.F) {
	for _, s := range []string{"", "*", "example.com,.internal:8443", "10.0.0.0/8, ::1, [fe80::1]:443", "*.x, ,,", "[::1", "a:b:c"} {
		f.Add(s, "a.example.com", "443")
	}
	f.Fuzz(func(t *testing.T, list, host, port string) {
		rules := parseNoProxy(list)
		matchNoProxy(rules, host, port)
		if !matchNoProxy(parseNoProxy(list+",*"), host, port) {
			t.Fatal("* did not match")
		}
		if strings.TrimSpace(strings.ReplaceAll(list, ",", "")) == "" && matchNoProxy(rules, host, port) {
			t.Fatal("empty list matched")
		}
	})
}
