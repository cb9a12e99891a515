package ident

import (
	"errors"
	"fmt"
	"strings"
)

// MaxTokenLength is the longest enrollment token the installer accepts, in
// bytes (CONTRACT §4.4).
const MaxTokenLength = 4096

// Refusals of CheckToken, one per rule. None of them holds the token.
var (
	// ErrTokenEmpty: the enrollment token is empty.
	ErrTokenEmpty = errors.New("the enrollment token is empty")
	// ErrTokenTooLong: the enrollment token is longer than MaxTokenLength.
	ErrTokenTooLong = fmt.Errorf("the enrollment token is longer than %d bytes", MaxTokenLength)
	// ErrTokenCharacters: the enrollment token holds white space or a
	// control character.
	ErrTokenCharacters = errors.New("the enrollment token holds white space or a control character")
)

// CheckToken is the installer's one rule for an enrollment token: not
// empty, at most MaxTokenLength bytes, and no white space or control
// character (C0, DEL, C1, NEL, NBSP, U+2028, U+2029). Its error is the
// refusal of the rule that failed, never the token.
func CheckToken(tok string) error {
	switch {
	case tok == "":
		return ErrTokenEmpty
	case len(tok) > MaxTokenLength:
		return ErrTokenTooLong
	case strings.IndexFunc(tok, spaceOrControl) >= 0:
		return ErrTokenCharacters
	}
	return nil
}

func spaceOrControl(r rune) bool {
	return r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x85 || r == 0xa0 || r == 0x2028 || r == 0x2029
}
