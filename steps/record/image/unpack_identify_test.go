package image_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
)

func TestUnpackIdentify(t *testing.T) { image.BothWriteModes(t, testUnpackIdentify) }

func testUnpackIdentify(t *testing.T) {
	dir := t.TempDir()
	fx, err := imagetest.WriteFixture(dir, imagetest.Options{Label: "unpack-identify", PayloadSize: 5<<20 + 3})
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "unpacked.tar")
	id, err := image.UnpackIdentify(fx.GzPath, target, fx.TarSize, fx.TarSHA256)
	if err != nil {
		t.Fatal(err)
	}
	if id != fx.Identity {
		t.Fatalf("identity %+v, want %+v", id, fx.Identity)
	}
	if err := image.Verify(target, fx.ConfigDigest, fx.ManifestDigest); err != nil {
		t.Fatal(err)
	}
}

// TestUnpackIdentifyRefusesTampered: an archive whose unpacked size and
// sha256 match what a (wrong) manifest says, but whose layer was altered,
// is refused and not published.
func TestUnpackIdentifyRefusesTampered(t *testing.T) {
	archive, _ := buildArchive(t, imagetest.Options{Label: "tampered"}, nil, replaceAt(atLayer2, func(b []byte) []byte {
		b = bytes.Clone(b)
		b[600] ^= 1
		return b
	}))
	dir := t.TempDir()
	gzPath := filepath.Join(dir, "runtime.tar.gz")
	os.WriteFile(gzPath, image.Gz(t, archive), 0o600)
	target := filepath.Join(dir, "runtime.tar")
	_, err := image.UnpackIdentify(gzPath, target, int64(len(archive)), image.HexSum(archive))
	if !errors.Is(err, image.ErrBlobMismatch) {
		t.Fatalf("got %v, want ErrBlobMismatch", err)
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("target exists: %v", err)
	}
	if names := image.OnlyFiles(t, dir); len(names) != 1 {
		t.Fatalf("files left: %v", names)
	}
	// With a wrong unpacked sha256 as well, the mismatch is what is reported.
	_, err = image.UnpackIdentify(gzPath, target, int64(len(archive)), image.HexSum([]byte("other")))
	if !errors.Is(err, image.ErrUnpackMismatch) {
		t.Fatalf("got %v, want ErrUnpackMismatch", err)
	}
}
