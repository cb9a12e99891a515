package privsep

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

var sanitizeCases = []struct {
	name, in, want string
}{
	{"plain", "hello, world\n", "hello, world\n"},
	{"tab and newline kept", "a\tb\nc", "a\tb\nc"},
	{"carriage return", "40%\r50%", "40%?50%"},
	{"OSC title", "\x1b]0;evil\x07", "?]0;evil?"},
	{"CSI clear", "\x1b[2J\x1b[H", "?[2J?[H"},
	{"NUL and BEL", "a\x00b\x07", "a?b?"},
	{"DEL", "a\x7fb", "a?b"},
	{"C1 CSI as UTF-8", "a\u009b31mb", "a?31mb"},
	{"C1 NEL as UTF-8", "\u0085", "?"},
	{"C1 first and last", "\u0080\u009f", "??"},
	{"raw C1 byte", "a\x9b31m", "a?31m"},
	{"raw 0x80", "\x80", "?"},
	{"invalid high byte replaced", "caf\xe9", "caf?"},
	{"NBSP kept", "\u00a0", "\u00a0"},
	{"multibyte kept", "héllo ✓ 🚀", "héllo ✓ 🚀"},
	{"continuation 0x9b inside valid rune kept", "\u011b", "\u011b"},
	{"lone lead byte replaced", "\xc2", "?"},
	{"truncated rune then escape", "\xe2\x82\x1b[m", "???[m"},
	{"overlong ESC", "\xc0\x9b", "??"},
	{"surrogate", "\xed\xa0\x80", "???"},
	{"U+FFFD kept", "\ufffd", "\ufffd"},
}

func TestSanitize(t *testing.T) {
	for _, tc := range sanitizeCases {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(Sanitize(nil, []byte(tc.in))); got != tc.want {
				t.Errorf("Sanitize(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := SanitizeString(tc.in); got != tc.want {
				t.Errorf("SanitizeString(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSanitizeAppends(t *testing.T) {
	if got := string(Sanitize([]byte("> "), []byte("\x1bx"))); got != "> ?x" {
		t.Errorf("got %q", got)
	}
}

// TestWriterSplitWrites feeds every case to a Writer split at every point,
// and byte by byte: the result must equal Sanitize of the whole.
func TestWriterSplitWrites(t *testing.T) {
	extra := []struct{ name, in, want string }{
		{"C1 split between writes", "ab\xc2\x9bcd", "ab?cd"},
		{"emoji split", "x🚀y", "x🚀y"},
		{"ESC sequence split", "\x1b]0;evil\x07tail", "?]0;evil?tail"},
		{"incomplete at end", "ok\xf0\x9f", "ok??"},
	}
	cases := append(extra, sanitizeCases...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for split := 0; split <= len(tc.in); split++ {
				if got := writeChunks(t, tc.in[:split], tc.in[split:]); got != tc.want {
					t.Errorf("split at %d: got %q, want %q", split, got, tc.want)
				}
			}
			var chunks []string
			for i := range len(tc.in) {
				chunks = append(chunks, tc.in[i:i+1])
			}
			if got := writeChunks(t, chunks...); got != tc.want {
				t.Errorf("byte by byte: got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestWriterHoldsBackOnlyIncompleteRunes(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out)
	w.Write([]byte("ab\xe2\x9c"))
	if out.String() != "ab" {
		t.Fatalf("after a partial rune: %q, want %q", out.String(), "ab")
	}
	w.Write([]byte("\x93"))
	if out.String() != "ab✓" {
		t.Fatalf("after completing it: %q", out.String())
	}
}

func writeChunks(t *testing.T, chunks ...string) string {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out)
	for _, c := range chunks {
		n, err := w.Write([]byte(c))
		if err != nil || n != len(c) {
			t.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// FuzzSanitize checks, for any input and any split into two writes, that
// the stream form equals the whole-buffer form, that the output is no longer
// than the input, and that no control survives.
func FuzzSanitize(f *testing.F) {
	for _, tc := range sanitizeCases {
		f.Add([]byte(tc.in), uint8(len(tc.in)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint8) {
		whole := Sanitize(nil, in)
		if len(whole) > len(in) {
			t.Fatalf("output %q longer than input %q", whole, in)
		}
		cut := int(split) % (len(in) + 1)
		if got := writeChunks(t, string(in[:cut]), string(in[cut:])); got != string(whole) {
			t.Fatalf("split at %d: %q, whole %q", cut, got, whole)
		}
		checkNoControls(t, whole)
		if naive := naiveSanitize(in); string(naive) != string(whole) {
			t.Fatalf("Sanitize(%q) = %q, rune-by-rune %q", in, whole, naive)
		}
	})
}

// naiveSanitize is the rule applied one rune at a time, with no fast path.
func naiveSanitize(in []byte) []byte {
	var out []byte
	for i := 0; i < len(in); {
		r, size := utf8.DecodeRune(in[i:])
		switch {
		case r == utf8.RuneError && size == 1: // each invalid byte (CONTRACT §10)
			out = append(out, '?')
		case r < 0x20 && r != '\t' && r != '\n', r == 0x7f, r >= 0x80 && r <= 0x9f:
			out = append(out, '?')
		default:
			out = append(out, in[i:i+size]...)
		}
		i += size
	}
	return out
}

// TestWordScan puts every byte value, and the sequences the scan keeps
// without leaving it, at every position of a string longer than two
// words, so that the eight-byte scan must find them in the first word, the
// second, or the tail.
func TestWordScan(t *testing.T) {
	for b := range 256 {
		for pos := range 17 {
			in := []byte(strings.Repeat("a", 17))
			in[pos] = byte(b)
			if got, want := Sanitize(nil, in), naiveSanitize(in); string(got) != string(want) {
				t.Fatalf("byte %#x at %d: %q, want %q", b, pos, got, want)
			}
		}
	}
	// Sequences the scan keeps without leaving it, and their near misses
	// (a C1 control, the 0xe0 and 0xed leads, cut short), at every
	// position, the word's end included.
	for _, seq := range []string{"\n", "\t", "é", "✓", "\xc2\x85", "\xc3", "\xc3(", "\xe2\x9c", "\xe2\x9c(", "\xe0\xa4\x85", "\xed\x9f\xbf", "\xed\xa0\x80", "\xef\xbf\xbd"} {
		for pos := range 18 {
			in := []byte(strings.Repeat("a", 17))
			in = append(in[:pos], append([]byte(seq), in[pos:]...)...)
			if got, want := Sanitize(nil, in), naiveSanitize(in); string(got) != string(want) {
				t.Fatalf("%q at %d: %q, want %q", seq, pos, got, want)
			}
		}
	}
}

func BenchmarkSanitizeASCII(b *testing.B) {
	in := []byte(strings.Repeat("2024-05-01T10:00:00Z downloading runtime.tar.gz 40%\n", 64))
	buf := make([]byte, 0, len(in))
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		buf = Sanitize(buf[:0], in)
	}
}

// checkNoControls fails when out holds a C0 control other than tab and
// newline, DEL, a C1 control, or a raw byte 0x80–0x9F outside valid UTF-8.
func checkNoControls(t *testing.T, out []byte) {
	t.Helper()
	for i := 0; i < len(out); {
		r, size := utf8.DecodeRune(out[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			if out[i] >= 0x80 && out[i] <= 0x9f {
				t.Fatalf("raw C1 byte %#x at %d in %q", out[i], i, out)
			}
		case (r < 0x20 && r != '\t' && r != '\n') || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			t.Fatalf("control %U at %d in %q", r, i, out)
		}
		i += size
	}
	if strings.ContainsRune(string(out), 0x1b) {
		t.Fatalf("ESC in %q", out)
	}
}
