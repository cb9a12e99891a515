package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// writeJSON prints v as one indented JSON document. encoding/json leaves DEL
// and the C1 controls (U+0080–U+009F; U+009B is CSI) unescaped, and the
// values come from files and a process the service account controls, so they
// are escaped as \u007f and \u0080–\u009f: the document holds no byte a
// terminal acts on, and decodes to the same values.
//
// The document is indented as json.Encoder's SetIndent("", "  ") does it,
// byte for byte, but in one pass over the compact encoding (indentCompact):
// encoding/json indents through its validating scanner, a byte at a time,
// which for a thousand generations' leases (a megabyte) cost four times the
// encoding itself.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode the JSON output: %w", err)
	}
	_, err := w.Write(escapeControls(indentCompact(buf.Bytes())))
	return err
}

// indentCompact indents src, encoding/json's compact output of one value
// (followed by its newline), with two spaces per level, as json.Indent(dst,
// src, "", "  ") would: a newline and the indentation after every opening
// bracket and comma, ": " after every key, an empty object or array kept as
// {} or []. Strings are copied unchanged, skipped as a whole; src holds no
// white space outside them.
func indentCompact(src []byte) []byte {
	dst := make([]byte, 0, len(src)+len(src)/2)
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, ' ', ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			end := stringEnd(src, i)
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			dst = append(dst, c)
			if i+1 < len(src) && src[i+1] == c+2 { // '}' is '{'+2, ']' is '['+2
				dst = append(dst, c+2)
				i++
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, c, ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// stringEnd is the index just after the string that starts with the quote
// at src[start]: after the first quote not escaped by a backslash.
func stringEnd(src []byte, start int) int {
	for i := start + 1; ; {
		j := bytes.IndexByte(src[i:], '"')
		if j < 0 {
			return len(src)
		}
		i += j
		backslashes := 0
		for k := i - 1; k > start && src[k] == '\\'; k-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			return i
		}
	}
}

// escapeControls rewrites DEL and the UTF-8 encodings of U+0080–U+009F in
// encoding/json's output as \u escapes. Those bytes occur only inside
// strings (JSON's structure is ASCII without them), and encoding/json has
// already replaced invalid UTF-8, so a two-byte 0xc2 0x80–0x9f sequence is
// always one C1 character.
func escapeControls(b []byte) []byte {
	i := firstControl(b)
	if i < 0 {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	out, b = append(out, b[:i]...), b[i:]
	for len(b) > 0 {
		switch {
		case b[0] == 0x7f:
			out = append(out, `\u007f`...)
			b = b[1:]
		case b[0] == 0xc2 && len(b) > 1 && b[1] >= 0x80 && b[1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, b[1])
			b = b[2:]
		default:
			out = append(out, b[0])
			b = b[1:]
		}
	}
	return out
}

// firstControl is the index of the first DEL or two-byte C1 character in
// b, or -1. It scans with bytes.IndexByte: documents of a megabyte (a
// thousand generations' leases) are scanned at memory speed, not a rune at
// a time.
func firstControl(b []byte) int {
	del := bytes.IndexByte(b, 0x7f)
	before := b
	if del >= 0 {
		before = b[:del]
	}
	for off := 0; ; {
		j := bytes.IndexByte(before[off:], 0xc2)
		if j < 0 {
			return del
		}
		k := off + j
		if k+1 < len(b) && b[k+1] >= 0x80 && b[k+1] <= 0x9f {
			return k
		}
		off = k + 1
	}
}
