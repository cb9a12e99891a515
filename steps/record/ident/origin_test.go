package ident

import (
	"errors"
	"net/url"
	"testing"
)

// TestParseOrigin: the one origin rule, each refusal with its reason.
func TestParseOrigin(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want OriginReason // 0: accepted
	}{
		{"https://core.example.com", 0},
		{"http://127.0.0.1:8080", 0},
		{"https://core.example.com/", 0},
		{"http://:80", 0}, // a host with a port only: callers that need a name check Hostname
		{"ftp://core.example.com", OriginNotHTTP},
		{"https://", OriginNotHTTP},
		{"http:core", OriginNotHTTP},
		{"https://core.example.com\n", OriginNotHTTP},
		{"https://u:p@core.example.com", OriginCredentials},
		{"https://core.example.com/api", OriginPath},
		{"https://core.example.com?x=1", OriginPath},
		{"https://core.example.com#f", OriginPath},
		{"https://core.example.com/?", OriginCharacters},
		{"https://core.example.com#", OriginCharacters},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := ParseOrigin(tc.raw)
			var oe *OriginError
			switch {
			case tc.want == 0 && err != nil:
				t.Fatalf("ParseOrigin(%q) = %v", tc.raw, err)
			case tc.want == 0 && u == nil:
				t.Fatalf("ParseOrigin(%q) returned no URL", tc.raw)
			case tc.want != 0 && !errors.As(err, &oe):
				t.Fatalf("ParseOrigin(%q) = %v, want an *OriginError", tc.raw, err)
			case tc.want != 0 && oe.Reason != tc.want:
				t.Fatalf("ParseOrigin(%q) reason %d (%v), want %d", tc.raw, oe.Reason, err, tc.want)
			case tc.want > OriginNotHTTP && oe.URL == nil:
				t.Fatalf("ParseOrigin(%q): the error holds no parsed URL", tc.raw)
			}
		})
	}
}

func TestPlainHTTPToRemote(t *testing.T) {
	for raw, want := range map[string]bool{
		"http://core.example.com":  true,
		"http://10.0.0.1":          true,
		"https://core.example.com": false,
		"http://localhost:8080":    false,
		"http://LocalHost":         false,
		"http://127.0.0.2":         false,
		"http://[::1]:80":          false,
	} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := PlainHTTPToRemote(u); got != want {
			t.Errorf("PlainHTTPToRemote(%s) = %v, want %v", raw, got, want)
		}
	}
}
