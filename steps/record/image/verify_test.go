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
// and identity, writes nothing and leaves the descriptor at the start; the
// load reader then passes exactly the gunzipped bytes.
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
	lr := image.LoadReader(f, archiveOf(fx))
	defer lr.Close()
	tar, err := io.ReadAll(lr)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := image.IdentifyReader(bytes.NewReader(tar)); err != nil || got != fx.Identity || int64(len(tar)) != fx.TarSize || image.HexSum(tar) != fx.TarSHA256 {
		t.Fatalf("load stream: %d bytes, %+v, %v", len(tar), got, err)
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
