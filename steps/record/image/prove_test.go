package image_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

// bigFixture is a fixture whose unpacked archive is several MiB, larger
// than what LoadReader holds back, with its gzip bytes.
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

// writeInPieces writes b to w in pieces of random sizes, as a download's
// reads arrive.
func writeInPieces(w io.Writer, b []byte, r *rand.Rand) {
	for len(b) > 0 {
		n := min(len(b), 1+r.IntN(3<<20))
		w.Write(b[:n])
		b = b[n:]
	}
}

// TestProver: the bytes written in order prove the archive as
// VerifyArchive does, and the proof is remembered; a restart forgets what
// came before it.
func TestProver(t *testing.T) {
	fx, gz, _ := bigFixture(t, "prover")
	a := archiveOf(fx)
	if _, ok := image.Proven(a); ok {
		t.Fatal("proven before any proof")
	}
	p, err := image.NewProver(a)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	writeInPieces(p, gz[:len(gz)/3], r)
	p.Restart() // the part was emptied: the download starts at byte 0
	writeInPieces(p, gz[:len(gz)/2], r)
	p.Restart()
	writeInPieces(p, gz, r)
	id, err := p.Close()
	if err != nil || id != fx.Identity {
		t.Fatalf("Close: %+v, %v", id, err)
	}
	if got, ok := image.Proven(a); !ok || got != fx.Identity {
		t.Fatalf("Proven: %+v, %v", got, ok)
	}
}

// TestProverRefuses: what VerifyArchive refuses, the prover refuses too,
// and no proof is remembered; a writer is never held up by a proof that
// failed early.
func TestProverRefuses(t *testing.T) {
	fx, gz, _ := bigFixture(t, "prover-refuses")
	a := archiveOf(fx)
	corrupt := bytes.Clone(gz)
	for i := 100; i < 4000; i++ {
		corrupt[i] ^= 0x55 // the deflate stream fails early
	}
	otherID := a
	otherID.Want.ConfigDigest = "sha256:" + image.HexSum([]byte("other"))
	for name, c := range map[string]struct {
		b    []byte
		a    image.Archive
		want error
	}{
		"partial":  {gz[:len(gz)-1], a, image.ErrArchiveMismatch},
		"corrupt":  {corrupt, a, image.ErrArchiveMismatch},
		"trailing": {append(bytes.Clone(gz), 1), a, image.ErrArchiveMismatch},
		"identity": {gz, otherID, image.ErrIdentityMismatch},
		"unpacked": {gz, func() image.Archive { b := a; b.UnpackedSize++; return b }(), image.ErrUnpackMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := image.NewProver(c.a)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				writeInPieces(p, c.b, rand.New(rand.NewPCG(3, 4)))
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("the writer is held up by the proof")
			}
			if _, err := p.Close(); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if _, ok := image.Proven(c.a); ok {
				t.Fatal("a refused archive is remembered as proven")
			}
		})
	}
	if _, err := image.NewProver(image.Archive{}); !errors.Is(err, image.ErrBadDigest) {
		t.Fatalf("an archive without digests: %v", err)
	}
}

// readCounting reads r to its end and returns how many bytes it gave
// before the error that ended it.
func readCounting(r io.Reader) (int64, error) {
	return io.Copy(io.Discard, r)
}

// TestLoadReader: the engine's stream is the gunzipped archive, exactly;
// an archive that is not the proven bytes ends the stream in an error
// before its last MiB (the tar's end) is handed on, so a load of it cannot
// complete.
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
	lastByte := bytes.Clone(tar)
	lastByte[len(lastByte)-1] = 1
	firstByte := bytes.Clone(tar)
	firstByte[0] ^= 1
	for name, c := range map[string]struct {
		gz   []byte
		want error
	}{
		"the last byte differs":  {gzOf(lastByte), image.ErrArchiveMismatch},
		"the first byte differs": {gzOf(firstByte), image.ErrArchiveMismatch},
		"shorter":                {gzOf(tar[:len(tar)-512]), image.ErrArchiveMismatch},
		"longer":                 {gzOf(append(bytes.Clone(tar), make([]byte, 512)...)), image.ErrArchiveMismatch},
		"truncated gzip":         {gz[:len(gz)-100], image.ErrArchiveMismatch},
		"trailing bytes":         {append(bytes.Clone(gz), 0), image.ErrArchiveMismatch},
		"a flipped bit":          {func() []byte { b := bytes.Clone(gz); b[len(b)/2] ^= 1; return b }(), image.ErrArchiveMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			lr := image.LoadReader(bytes.NewReader(c.gz), a)
			defer lr.Close()
			n, err := readCounting(lr)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if limit := int64(len(tar)) - 1<<20; n > limit {
				t.Fatalf("%d bytes handed on before the error, more than %d: the tar's end went with them", n, limit)
			}
		})
	}

	// A reader closed halfway stops its inflater.
	lr = image.LoadReader(bytes.NewReader(gz), a)
	if _, err := io.ReadFull(lr, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	lr.Close()
}
