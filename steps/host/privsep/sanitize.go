package privsep

import (
	"encoding/binary"
	"io"
	"math/bits"
	"slices"
	"sync"
	"unicode/utf8"
)

// replacement is what every terminal control becomes.
const replacement = '?'

// Sanitize appends src to dst with every terminal control replaced by '?',
// and returns the extended slice. Replaced are the C0 controls except tab
// and newline (so also carriage return and ESC), DEL, the C1 controls
// U+0080–U+009F written as UTF-8, and every byte that is not part of a
// valid UTF-8 sequence (a terminal in an 8-bit mode reads 0x80–0x9F as C1
// controls: 0x9B is CSI; CONTRACT §10 replaces them all). Everything else is
// copied unchanged. The output is never longer than src.
//
// Sanitize treats src as complete: an incomplete UTF-8 sequence at its end
// is judged byte by byte. Use Writer for a stream that arrives in pieces.
func Sanitize(dst, src []byte) []byte {
	dst, _ = sanitize(dst, src, true)
	return dst
}

// SanitizeString is Sanitize for a string.
func SanitizeString(s string) string {
	return string(Sanitize(make([]byte, 0, len(s)), []byte(s)))
}

// sanitize appends the sanitized form of src to dst. Unless final, a
// trailing prefix of a valid multi-byte sequence is left unconsumed, and its
// length returned as rest, so that the next piece of the stream can complete
// it.
//
// It scans for the bytes to replace and copies the safe stretches between
// them whole; dst is grown once, as the output is never longer than src.
func sanitize(dst, src []byte, final bool) (out []byte, rest int) {
	dst = slices.Grow(dst, len(src))
	mark := 0 // src[mark:i] is safe and not yet copied
	i := 0
	for i < len(src) {
		// Skip printable ASCII (0x20–0x7e), eight bytes at a time while
		// it can. In a little-endian word, a byte is flagged when it has
		// its top bit set, or, its low seven bits t being below 0x80,
		// when t+0x60 lacks it (t < 0x20) or t+1 has it (t = 0x7f); no
		// sum carries into the next byte, so every flag is exact and the
		// lowest is the first byte outside the range. Newlines, tabs and
		// the common characters beyond ASCII are kept without leaving
		// the scan (keptAt).
		for len(src)-i >= 8 {
			w := binary.LittleEndian.Uint64(src[i:])
			t := w &^ msbs
			if flags := (w | ^(t + 0x60*lsbs) | (t + lsbs)) & msbs; flags != 0 {
				i += bits.TrailingZeros64(flags) / 8
				if n := keptAt(src, i); n > 0 {
					// A line's end, a tab or a common character beyond
					// ASCII is kept as it is: scan on.
					i += n
					continue
				}
				break
			}
			i += 8
		}
		for i < len(src) && src[i] >= 0x20 && src[i] < 0x7f {
			i++
		}
		if i == len(src) {
			break
		}
		if n := keptAt(src, i); n > 0 {
			i += n
			continue
		}
		size, replace := 1, false
		if src[i] < utf8.RuneSelf {
			replace = true
		} else {
			if !final && !utf8.FullRune(src[i:]) {
				return append(dst, src[mark:i]...), len(src) - i
			}
			var r rune
			r, size = utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				// A byte that is not part of valid UTF-8 is replaced
				// (CONTRACT §10): an 8-bit terminal could read it as a
				// C1 control, and no terminal shows it as text.
				replace = true
			} else {
				replace = r >= 0x80 && r <= 0x9f
			}
		}
		if replace {
			dst = append(dst, src[mark:i]...)
			dst = append(dst, replacement)
			mark = i + size
		}
		i += size
	}
	return append(dst, src[mark:]...), 0
}

// keptAt is the length of what at src[i] sanitize keeps without decoding
// it: a newline, a tab, a valid two-byte sequence above U+00BF (never a C1
// control: those are 0xc2 0x80–0x9f) or a valid three-byte sequence other
// than those led by 0xe0 and 0xed (which exclude overlong forms and
// surrogates, and take the general path); 0 for anything else.
func keptAt(src []byte, i int) int {
	switch c := src[i]; {
	case c == '\n' || c == '\t':
		return 1
	case c >= 0xc3 && c <= 0xdf && i+1 < len(src) && src[i+1]&0xc0 == 0x80:
		return 2
	case c >= 0xe1 && c <= 0xef && c != 0xed && i+2 < len(src) && src[i+1]&0xc0 == 0x80 && src[i+2]&0xc0 == 0x80:
		return 3
	}
	return 0
}

// Word masks for the eight-byte scan in sanitize.
const (
	lsbs = 0x0101010101010101
	msbs = 0x8080808080808080
)

// Writer sanitizes a byte stream on its way to an underlying writer, the
// terminal. It is safe across Write boundaries: a UTF-8 sequence split
// between two writes is held back (at most three bytes) until it is complete
// or proven invalid, so neither a split character is corrupted nor a split
// C1 control let through. Close (or Flush) judges what is still held back.
// A Writer is safe for concurrent use; each Write reaches the underlying
// writer as one Write call.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending [utf8.UTFMax]byte
	npend   int
	buf     []byte
}

// NewWriter returns a Writer that sanitizes into w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write sanitizes p and writes the result to the underlying writer. It
// reports len(p) when the underlying write succeeded, even when some bytes
// are still held back as the start of a UTF-8 sequence.
func (s *Writer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = s.buf[:0]
	src := p
	if s.npend > 0 {
		// Complete the held-back sequence with at most the bytes it needs,
		// so that only a short joined prefix is copied.
		n := copy(s.pending[s.npend:], p)
		joined := s.pending[:s.npend+n]
		out, rest := sanitize(s.buf, joined, false)
		if rest == len(joined) {
			// Still incomplete (p was shorter than what the rune needs).
			s.npend += n
			return len(p), nil
		}
		// Bytes of p that the joined prefix consumed; the held-back bytes
		// are always consumed first, so rest counts only bytes of p.
		s.buf = out
		src = p[n-rest:]
		s.npend = 0
	}
	out, rest := sanitize(s.buf, src, false)
	s.buf = out
	s.npend = copy(s.pending[:], src[len(src)-rest:])
	if len(s.buf) > 0 {
		if _, err := s.w.Write(s.buf); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Flush writes out what is held back, judged as complete input.
func (s *Writer) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.npend == 0 {
		return nil
	}
	s.buf = Sanitize(s.buf[:0], s.pending[:s.npend])
	s.npend = 0
	_, err := s.w.Write(s.buf)
	return err
}

// Close flushes; it does not close the underlying writer.
func (s *Writer) Close() error { return s.Flush() }
