package main

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// escapeRunes is escapeControls a rune at a time, the obvious way.
func escapeRunes(b []byte) []byte {
	var out []byte
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		switch {
		case r == 0x7f || r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

func TestEscapeControls(t *testing.T) {
	cases := []string{"", "abc", "a\x7fb", "a\u0085b", "\u00a0 is no control", "é\u009f", "\u0080\x7f", "\x7f\u0080", "x\u00c2\u0085", "\u0100\u0085"}
	// Random valid UTF-8 built from ASCII, DEL, C1, Latin-1 and wider
	// characters, as encoding/json's output holds them.
	pieces := []string{"a", "\"", "\x7f", "\u0080", "\u0085", "\u009f", "\u00a0", "\u00c2", "é", "€", "𝄞"}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b bytes.Buffer
		for range rng.IntN(20) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		cases = append(cases, b.String())
	}
	for _, c := range cases {
		want := escapeRunes([]byte(c))
		if got := escapeControls([]byte(c)); !bytes.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("escapeControls(%q) = %q, want %q", c, got, want)
		}
	}
}
