package proxy

import (
	"strings"
	"testing"
)

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
