package image

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/go-digest"
	"golang.org/x/sys/unix"
)

// Identity is what an image archive proves about the image it holds.
type Identity struct {
	// ConfigDigest is the digest of the image config blob, sha256:<hex>:
	// the manifest's images.runtime, and the image ID in Docker's classic
	// image store.
	ConfigDigest string
	// ManifestDigest is the digest of the descriptor index.json lists,
	// sha256:<hex>: an OCI image manifest, or an image index holding one
	// linux/amd64 manifest (and any attestation manifests). It is the manifest's
	// image_manifest_digests.runtime, and the image ID in Docker's
	// containerd image store.
	ManifestDigest string
}

// Check compares id with want and returns an error wrapping
// ErrIdentityMismatch naming each digest that differs.
func (id Identity) Check(want Identity) error {
	var errs []error
	if id.ConfigDigest != want.ConfigDigest {
		errs = append(errs, fmt.Errorf("%w: config digest is %s, the release manifest says %s", ErrIdentityMismatch, id.ConfigDigest, want.ConfigDigest))
	}
	if id.ManifestDigest != want.ManifestDigest {
		errs = append(errs, fmt.Errorf("%w: manifest digest is %s, the release manifest says %s", ErrIdentityMismatch, id.ManifestDigest, want.ManifestDigest))
	}
	return errors.Join(errs...)
}

// Identify reads the image archive at tarPath (an uncompressed tar as
// `docker save` writes it) once, and derives and verifies its two
// identities. It never follows a symbolic link at tarPath.
//
// What is verified, in this order once the stream was read:
//   - every blob under blobs/sha256/ hashes to its file name, whether
//     referenced or not; names of interest (blobs, index.json,
//     manifest.json, oci-layout) are regular files and appear once; no entry
//     name is absolute or climbs out with "..";
//   - oci-layout says imageLayoutVersion 1.0.0;
//   - index.json lists exactly one image (descriptors naming the same digest,
//     one per tag, count once), with no platform or linux/amd64;
//   - that descriptor's blob is present with the descriptor's size; if it
//     is an image index, it lists exactly one manifest for linux/amd64,
//     which is present with its size, and besides it only attestation
//     manifests as buildx adds them (platform unknown/unknown and the
//     annotation vnd.docker.reference.type: attestation-manifest; if
//     they name the manifest they attest, vnd.docker.reference.digest, it
//     is that linux/amd64 manifest). Attestation blobs may be absent; if
//     present they were hashed and must have their descriptor's size; they
//     are never read as an image;
//   - the manifest's config blob is present with its size, and says os
//     linux, architecture amd64, no variant;
//   - every layer blob is present with its size; the config's
//     rootfs.diff_ids has one entry per layer, equal to the layer digest
//     for uncompressed layers (compressed layers' diff_ids are checked by
//     the engine on import);
//   - manifest.json lists exactly one image whose Config and Layers are
//     the paths of exactly those config and layer blobs, in order.
//
// The identities are ManifestDigest = the digest index.json lists and
// ConfigDigest = the manifest's config digest. Refusals wrap ErrMalformed,
// ErrMissingBlob, ErrBlobMismatch, ErrPlatform or ErrInconsistent.
func Identify(tarPath string) (Identity, error) {
	f, err := openRegular(tarPath)
	if err != nil {
		return Identity{}, fmt.Errorf("identify image archive %s: %w", tarPath, err)
	}
	defer f.Close()
	id, err := IdentifyReader(bufio.NewReaderSize(f, copyBufSize))
	if err != nil {
		return Identity{}, fmt.Errorf("image archive %s: %w", tarPath, err)
	}
	return id, nil
}

// IdentifyReader is Identify for an archive stream; it reads r to the tar
// end-of-archive marker. See Identify for what is verified.
func IdentifyReader(r io.Reader) (Identity, error) {
	er := &errReader{r: r}
	s := newScanner()
	if err := s.scan(er); err != nil {
		if er.err != nil {
			return Identity{}, fmt.Errorf("read image archive: %w", er.err)
		}
		return Identity{}, err
	}
	return s.identity()
}

// Verify identifies the archive at tarPath and checks both identities
// against the release manifest's images.runtime (wantConfig) and
// image_manifest_digests.runtime (wantManifest). A mismatch wraps
// ErrIdentityMismatch.
func Verify(tarPath, wantConfig, wantManifest string) error {
	if !validDigest(digest.Digest(wantConfig)) || !validDigest(digest.Digest(wantManifest)) {
		return fmt.Errorf("verify image archive %s: %w: want %q and %q", tarPath, ErrBadDigest, wantConfig, wantManifest)
	}
	id, err := Identify(tarPath)
	if err != nil {
		return err
	}
	if err := id.Check(Identity{ConfigDigest: wantConfig, ManifestDigest: wantManifest}); err != nil {
		return fmt.Errorf("image archive %s: %w", tarPath, err)
	}
	return nil
}

// errReader remembers the first error of the underlying reader other than
// io.EOF, so that an I/O failure is not reported as a malformed archive.
type errReader struct {
	r   io.Reader
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && e.err == nil {
		e.err = err
	}
	return n, err
}

// openRegular opens path read-only without following a final symbolic link
// and without blocking on a FIFO, and checks that it is a regular file.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s is a symbolic link", path)
		}
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}
