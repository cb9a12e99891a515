package image

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"
)

// The helpers below serve the tests of package image and those of package
// image_test, which build archives with imagetest (which imports image).

// Gz returns b gzip-compressed.
func Gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

// HexSum is the sha256 of b in hex.
func HexSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// OnlyFiles returns the names in dir.
func OnlyFiles(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// BothWriteModes runs f with O_DIRECT writing (where the file system
// allows it) and with buffered writing.
func BothWriteModes(t *testing.T, f func(t *testing.T)) {
	for _, direct := range []bool{true, false} {
		t.Run(map[bool]string{true: "direct", false: "buffered"}[direct], func(t *testing.T) {
			defer func(old bool) { directIO = old }(directIO)
			directIO = direct
			f(t)
		})
	}
}
