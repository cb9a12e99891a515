package release

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"
)

// SumsName is the file name of the checksum list.
const SumsName = "SHA256SUMS"

// Sums maps a relative path of the payload directory to its sha256 in 64
// lowercase hex digits, as listed in SHA256SUMS (CONTRACT §1.3).
type Sums map[string]string

// ParseSHA256SUMS parses SHA256SUMS bytes: one "<64 lowercase hex>  <path>"
// line per file, split at the first double space. A duplicate path, a
// checksum that is not 64 lowercase hex digits, an unsafe path, an empty or
// malformed line are fatal. Failures are *FieldError of kind ErrInvalidSums
// (Field names the line), or ErrTooLarge.
func ParseSHA256SUMS(data []byte) (Sums, error) {
	if len(data) > MaxMetadataSize {
		return nil, fmt.Errorf("%s: %w (%d bytes)", SumsName, ErrTooLarge, len(data))
	}
	if !utf8.Valid(data) {
		return nil, sumsErr(SumsName, "not valid UTF-8")
	}
	text := string(data)
	if text != "" && !strings.HasSuffix(text, "\n") {
		return nil, sumsErr(SumsName, "last line does not end with a newline")
	}
	sums := Sums{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if text == "" {
			break
		}
		where := fmt.Sprintf("line %d", i+1)
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			return nil, sumsErr(where, "no two spaces between checksum and path")
		}
		if !IsSHA256(sum) {
			return nil, sumsErr(where, "checksum must be 64 lowercase hex digits")
		}
		if err := CheckRelativePath(name); err != nil {
			return nil, sumsErr(where, "path %v", err)
		}
		if _, dup := sums[name]; dup {
			return nil, sumsErr(where, "%q is listed twice", name)
		}
		sums[name] = sum
	}
	return sums, nil
}

// Paths returns the listed paths, sorted.
func (s Sums) Paths() []string { return sortedKeys(s) }

// Marshal writes SHA256SUMS: one line per path, sorted by path. It refuses
// entries ParseSHA256SUMS would refuse.
func (s Sums) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	for _, p := range s.Paths() {
		if err := CheckRelativePath(p); err != nil {
			return nil, sumsErr(p, "path %v", err)
		}
		if !IsSHA256(s[p]) {
			return nil, sumsErr(p, "checksum must be 64 lowercase hex digits")
		}
		fmt.Fprintf(&buf, "%s  %s\n", s[p], p)
	}
	return buf.Bytes(), nil
}

// CheckRelativePath checks a relative POSIX path of a payload: non-empty,
// clean (no "", "." or ".." segment, no leading or trailing slash), and free
// of backslashes, NUL, other control characters and "%".
func CheckRelativePath(p string) error {
	if p == "" {
		return fmt.Errorf("is empty")
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == '\\' || r == '%' || (r >= 0x80 && r < 0xa0) {
			return fmt.Errorf("%q holds a control character, backslash or %%", p)
		}
	}
	if strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return fmt.Errorf("%q is not a clean relative path", p)
	}
	return nil
}
