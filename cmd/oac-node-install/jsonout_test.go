package main

import (
	"bytes"
	"encoding/json"
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

// randomJSON builds a value of every JSON type, nested, with strings that
// hold quotes, backslashes (also before a closing quote), escapes, brackets
// and commas, and empty objects and arrays.
func randomJSON(rng *rand.Rand, depth int) any {
	strs := []string{"", "a", `"`, `\`, `\\`, `a\"b`, "x\\", "{[,:]}", "é€𝄞", "\u0085\x7f", "\t\n", "<&>"}
	switch k := rng.IntN(7); {
	case k == 0 || depth > 4:
		return strs[rng.IntN(len(strs))]
	case k == 1:
		return rng.IntN(2000) - 1000
	case k == 2:
		return rng.IntN(2) == 0
	case k == 3:
		return nil
	case k == 4:
		a := []any{}
		for range rng.IntN(4) {
			a = append(a, randomJSON(rng, depth+1))
		}
		return a
	default:
		m := map[string]any{}
		for range rng.IntN(4) {
			m[strs[rng.IntN(len(strs))]] = randomJSON(rng, depth+1)
		}
		return m
	}
}

// TestWriteJSONIndent: writeJSON's output is json.Encoder's indented
// output, escaped, byte for byte.
func TestWriteJSONIndent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	values := []any{map[string]any{}, []any{}, "", 0, nil, map[string]any{"a": []any{}, "b": map[string]any{}, "c": []any{map[string]any{}}}}
	for range 3000 {
		values = append(values, randomJSON(rng, 0))
	}
	for _, v := range values {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := writeJSON(&got, v); err != nil {
			t.Fatal(err)
		}
		if w := escapeControls(want.Bytes()); !bytes.Equal(got.Bytes(), w) {
			t.Fatalf("writeJSON(%#v) =\n%s\nwant\n%s", v, got.Bytes(), w)
		}
	}
}

// FuzzIndentCompact: for any valid JSON in compact form, indentCompact is
// json.Indent with two spaces.
func FuzzIndentCompact(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,{"b":"\"}"},[]],"c":{}}`, `"\\"`, `[[[]],{"":""}]`, `"x\\\"y"`, `true`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			return
		}
		compact.WriteByte('\n')
		var want bytes.Buffer
		if err := json.Indent(&want, compact.Bytes(), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := indentCompact(compact.Bytes()); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("indentCompact(%q) = %q, want %q", compact.Bytes(), got, want.Bytes())
		}
	})
}
