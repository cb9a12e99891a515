package image_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"sync/atomic"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// bigFixture is a fixture whose unpacked archive is several MiB, larger
// than what LoadReader holds back, with its gzip and tar bytes.
func bigFixture(t *testing.T, label string) (imagetest.Fixture, []byte, []byte) {
	t.Helper()
	fx, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: label, PayloadSize: 3<<20 + 7, PayloadLayers: 2})
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile(fx.GzPath)
	if err != nil {
		t.Fatal(err)
	}
	tar, err := os.ReadFile(fx.TarPath)
	if err != nil {
		t.Fatal(err)
	}
	return fx, gz, tar
}

// readCounting reads r to its end and returns how many bytes it gave
// before the error that ended it.
func readCounting(r io.Reader) (int64, error) {
	return io.Copy(io.Discard, r)
}

// TestLoadReader: the engine's stream is the gunzipped archive, exactly,
// read once; whatever the proof refuses — other compressed bytes, other
// gunzipped bytes, a blob that is not its digest, another identity — ends
// the stream in that refusal before its last MiB (the tar's end) is handed
// on, so a load of it cannot complete.
func TestLoadReader(t *testing.T) {
	fx, gz, tar := bigFixture(t, "load-reader")
	a := archiveOf(fx)
	lr := image.LoadReader(bytes.NewReader(gz), a)
	got, err := io.ReadAll(lr)
	lr.Close()
	if err != nil || !bytes.Equal(got, tar) {
		t.Fatalf("%d bytes (want %d), %v", len(got), len(tar), err)
	}

	gzOf := func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	// An archive whose manifest names its altered layer: its own digests
	// are consistent, the blob is not its digest.
	tampered, tamperedID := buildArchive(t, imagetest.Options{Label: "load-reader-tampered", PayloadSize: 3 << 20}, nil, replaceAt(atLayer2, func(b []byte) []byte {
		b = bytes.Clone(b)
		b[600] ^= 1
		return b
	}))
	tamperedGz := gzOf(tampered)
	selfConsistent := func(gz, tar []byte, id image.Identity) image.Archive {
		return image.Archive{Size: int64(len(gz)), SHA256: image.HexSum(gz), UnpackedSize: int64(len(tar)), UnpackedSHA256: image.HexSum(tar), Want: id}
	}
	other := a
	other.Want.ConfigDigest = "sha256:" + image.HexSum([]byte("other"))
	unpacked := a
	unpacked.UnpackedSHA256 = image.HexSum([]byte("other"))
	flipped := bytes.Clone(gz)
	flipped[len(flipped)/2] ^= 1
	for name, c := range map[string]struct {
		gz   []byte
		a    image.Archive
		want error
	}{
		"a flipped bit":         {flipped, a, image.ErrArchiveMismatch},
		"truncated":             {gz[:len(gz)-100], a, image.ErrArchiveMismatch},
		"trailing bytes":        {append(bytes.Clone(gz), 0), a, image.ErrArchiveMismatch},
		"another archive":       {gzOf(append(bytes.Clone(tar[:len(tar)-1]), 1)), a, image.ErrArchiveMismatch},
		"other unpacked sha256": {gz, unpacked, image.ErrUnpackMismatch},
		"another identity":      {gz, other, image.ErrIdentityMismatch},
		"a tampered layer":      {tamperedGz, selfConsistent(tamperedGz, tampered, tamperedID), image.ErrBlobMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			lr := image.LoadReader(bytes.NewReader(c.gz), c.a)
			defer lr.Close()
			n, err := readCounting(lr)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if limit := int64(len(tar)) - 1<<20; n > limit {
				t.Fatalf("%d bytes handed on before the refusal, more than %d: the tar's end went with them", n, limit)
			}
			if _, again := lr.Read(make([]byte, 10)); !errors.Is(again, c.want) {
				t.Fatalf("a read after the refusal: %v", again)
			}
		})
	}
	if _, err := io.ReadAll(image.LoadReader(bytes.NewReader(gz), image.Archive{})); !errors.Is(err, image.ErrBadDigest) {
		t.Fatalf("an archive without digests: %v", err)
	}

	// A reader closed halfway (the engine failed) stops at once, without
	// reading the rest of the archive (larger than what runs ahead).
	big, err := imagetest.WriteFixture(t.TempDir(), imagetest.Options{Label: "load-reader-close", PayloadSize: 48 << 20})
	if err != nil {
		t.Fatal(err)
	}
	bigGz, err := os.ReadFile(big.GzPath)
	if err != nil {
		t.Fatal(err)
	}
	counted := &countingReader{r: bytes.NewReader(bigGz)}
	lr = image.LoadReader(counted, archiveOf(big))
	if _, err := io.ReadFull(lr, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	lr.Close()
	if n := counted.n.Load(); n == int64(len(bigGz)) {
		t.Fatalf("Close read the whole archive (%d bytes)", n)
	}
	if _, err := lr.Read(make([]byte, 10)); err == nil {
		t.Fatal("a read after Close succeeded")
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}
