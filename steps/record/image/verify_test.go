package image_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

func archiveOf(fx imagetest.Fixture) image.Archive {
	return image.Archive{Size: fx.GzSize, SHA256: fx.GzSHA256, UnpackedSize: fx.TarSize, UnpackedSHA256: fx.TarSHA256, Want: fx.Identity}
}

// TestVerifyArchive: one read of the compressed archive proves its bytes
// and identity, writes nothing, and leaves the descriptor at the start;
// the checked reader then passes exactly those bytes.
func TestVerifyArchive(t *testing.T) {
	dir := t.TempDir()
	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: "verify-archive", PayloadSize: 5<<20 + 3, PayloadLayers: 3})
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(fx.TarPath)
	f, err := os.Open(fx.GzPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := image.VerifyArchive(f, archiveOf(fx))
	if err != nil {
		t.Fatal(err)
	}
	if id != fx.Identity {
		t.Fatalf("identity %+v, want %+v", id, fx.Identity)
	}
	if names := image.OnlyFiles(t, dir); len(names) != 1 {
		t.Fatalf("files: %v", names)
	}
	got, err := image.IdentifyStream(image.CheckedReader(f, fx.GzSize, fx.GzSHA256))
	if err != nil || got != fx.Identity {
		t.Fatalf("load stream: %+v, %v", got, err)
	}
}

func TestVerifyArchiveRefuses(t *testing.T) {
	dir := t.TempDir()
	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: "verify-refuses"})
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile(fx.GzPath)
	if err != nil {
		t.Fatal(err)
	}
	verify := func(b []byte, a image.Archive) error {
		p := filepath.Join(t.TempDir(), "runtime.tar.gz")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		_, err = image.VerifyArchive(f, a)
		return err
	}
	a := archiveOf(fx)
	flipped := bytes.Clone(gz)
	flipped[len(flipped)/2] ^= 1
	for name, c := range map[string]struct {
		b    []byte
		a    func(image.Archive) image.Archive
		want error
	}{
		"flipped":   {flipped, nil, image.ErrArchiveMismatch},
		"truncated": {gz[:len(gz)-10], nil, image.ErrArchiveMismatch},
		"trailing":  {append(bytes.Clone(gz), 0, 0, 0), nil, image.ErrArchiveMismatch},
		"unpacked sha256": {gz, func(a image.Archive) image.Archive {
			a.UnpackedSHA256 = image.HexSum([]byte("other"))
			return a
		}, image.ErrUnpackMismatch},
		"unpacked shorter than declared": {gz, func(a image.Archive) image.Archive { a.UnpackedSize--; return a }, image.ErrUnpackMismatch},
		"identity": {gz, func(a image.Archive) image.Archive {
			a.Want.ConfigDigest = "sha256:" + image.HexSum([]byte("other"))
			return a
		}, image.ErrIdentityMismatch},
		"bad digest": {gz, func(a image.Archive) image.Archive { a.SHA256 = "x"; return a }, image.ErrBadDigest},
	} {
		t.Run(name, func(t *testing.T) {
			aa := a
			if c.a != nil {
				aa = c.a(a)
			}
			if err := verify(c.b, aa); !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestVerifyArchiveRefusesTampered: a layer altered under a manifest that
// names the altered bytes is refused by the identity's checks.
func TestVerifyArchiveRefusesTampered(t *testing.T) {
	archive, id := buildArchive(t, imagetest.Options{Label: "tampered"}, nil, replaceAt(atLayer2, func(b []byte) []byte {
		b = bytes.Clone(b)
		b[600] ^= 1
		return b
	}))
	gz := image.Gz(t, archive)
	p := filepath.Join(t.TempDir(), "runtime.tar.gz")
	os.WriteFile(p, gz, 0o600)
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = image.VerifyArchive(f, image.Archive{Size: int64(len(gz)), SHA256: image.HexSum(gz),
		UnpackedSize: int64(len(archive)), UnpackedSHA256: image.HexSum(archive), Want: id})
	if !errors.Is(err, image.ErrBlobMismatch) {
		t.Fatalf("got %v, want ErrBlobMismatch", err)
	}
}

// TestCheckedReader: a stream that is not the proven bytes ends in an
// error, never in io.EOF.
func TestCheckedReader(t *testing.T) {
	b := []byte("proven bytes")
	sum := image.HexSum(b)
	if got, err := io.ReadAll(image.CheckedReader(bytes.NewReader(b), int64(len(b)), sum)); err != nil || !bytes.Equal(got, b) {
		t.Fatalf("%q, %v", got, err)
	}
	for _, other := range [][]byte{[]byte("proven bytez"), []byte("proven byte"), []byte("proven bytes!")} {
		if _, err := io.ReadAll(image.CheckedReader(bytes.NewReader(other), int64(len(b)), sum)); !errors.Is(err, image.ErrArchiveMismatch) {
			t.Fatalf("%q: %v", other, err)
		}
	}
}
