package ident

import (
	"errors"
	"strings"
	"testing"
)

// TestCheckToken: each rule refuses with its own message, which never holds
// the token.
func TestCheckToken(t *testing.T) {
	for _, tc := range []struct {
		name, token string
		want        error
		message     string
	}{
		{"ok", "oac_enroll_0123456789abcdef", nil, ""},
		{"longest", strings.Repeat("t", MaxTokenLength), nil, ""},
		{"empty", "", ErrTokenEmpty, "the enrollment token is empty"},
		{"too long", strings.Repeat("t", MaxTokenLength+1), ErrTokenTooLong, "the enrollment token is longer than 4096 bytes"},
		{"space", "secret token", ErrTokenCharacters, "the enrollment token holds white space or a control character"},
		{"newline", "secret\ntoken", ErrTokenCharacters, "the enrollment token holds white space or a control character"},
		{"escape", "secret\x1b[2Jtoken", ErrTokenCharacters, "the enrollment token holds white space or a control character"},
		{"DEL", "secret\x7ftoken", ErrTokenCharacters, "the enrollment token holds white space or a control character"},
		{"no-break space", "secret\u00a0token", ErrTokenCharacters, "the enrollment token holds white space or a control character"},
		{"line separator", "secret\u2028token", ErrTokenCharacters, "the enrollment token holds white space or a control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckToken(tc.token)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("CheckToken = %v, want %v", err, tc.want)
			}
			if err == nil {
				return
			}
			if err.Error() != tc.message {
				t.Errorf("message %q, want %q", err, tc.message)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("message %q holds the token", err)
			}
		})
	}
}
