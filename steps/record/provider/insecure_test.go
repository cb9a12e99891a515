package provider

import (
	"errors"
	"testing"
)

func TestCheckOriginPolicy(t *testing.T) {
	for _, tc := range []struct {
		origin   string
		insecure bool
		refused  bool
	}{
		{"https://core.example.com", false, false},
		{"http://core.example.com", false, true},
		{"http://core.example.com", true, false},
		{"HTTP://core.example.com", false, true},
		{"http://10.0.0.5:8080", false, true},
		{"http://localhost:8080", false, false},
		{"http://LOCALHOST", false, false},
		{"http://127.0.0.1:8080", false, false},
		{"http://127.8.9.10", false, false},
		{"http://[::1]:8080", false, false},
		{"http://[::ffff:127.0.0.1]:80", false, false},
		{"http://localhost.example.com", false, true},
		{"http://0.0.0.0", false, true},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			err := CheckOriginPolicy(tc.origin, tc.insecure)
			if got := errors.Is(err, ErrInsecureOrigin); got != tc.refused || (err != nil && !got) {
				t.Errorf("CheckOriginPolicy(%q, %v) = %v, want refused %v", tc.origin, tc.insecure, err, tc.refused)
			}
		})
	}
}
