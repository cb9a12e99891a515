package image

import (
	"bytes"
	"testing"

	"github.com/opencontainers/go-digest"
)

// FuzzIdentifyReader feeds arbitrary archives to the identity check: it
// must never panic, and whatever it accepts must name well-formed digests.
// The seeds (testdata/fuzz/FuzzIdentifyReader) are a valid fixture archive,
// a nested-index one, buildx-like ones with an attestation manifest (with
// and without its blobs) and a few broken ones.
func FuzzIdentifyReader(f *testing.F) {
	f.Fuzz(func(t *testing.T, archive []byte) {
		id, err := IdentifyReader(bytes.NewReader(archive))
		if err != nil {
			return
		}
		if !validDigest(digest.Digest(id.ConfigDigest)) || !validDigest(digest.Digest(id.ManifestDigest)) {
			t.Fatalf("accepted with identity %+v", id)
		}
	})
}
