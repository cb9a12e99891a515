package imagetest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"
)

func TestPgzipWriter(t *testing.T) {
	for _, n := range []int{0, 1, pgzipBlock - 1, pgzipBlock, 3*pgzipBlock + 17} {
		in := make([]byte, n)
		newPayload("pgzip", int64(n)).Read(in)
		var out bytes.Buffer
		zw := newPgzipWriter(&out, gzip.BestSpeed)
		// Uneven writes across block boundaries.
		for p := in; len(p) > 0; {
			c := min(len(p), 1<<20+3)
			zw.Write(p[:c])
			p = p[c:]
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(&out)
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, in) {
			t.Fatalf("%d bytes: round trip differs (%v)", n, err)
		}
	}
}

type brokenWriter struct{}

func (brokenWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestPgzipWriterError(t *testing.T) {
	zw := newPgzipWriter(brokenWriter{}, gzip.BestSpeed)
	zw.Write(make([]byte, 2*pgzipBlock+1))
	if err := zw.Close(); err == nil {
		t.Fatal("write error lost")
	}
}
