package image

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

const (
	// maxMetaFile bounds index.json, manifest.json and oci-layout.
	maxMetaFile = 1 << 20
	// maxMetaBlob bounds a blob kept in memory as a possible manifest,
	// index or config; larger blobs are hashed and dropped.
	maxMetaBlob = 4 << 20
	// maxMetaTotal bounds the memory all kept blobs may take.
	maxMetaTotal = 64 << 20
	copyBufSize  = 1 << 20
)

// scanner reads an image archive stream once, hashing every blob under
// blobs/sha256/ and keeping the small JSON records, so that the archive's
// records can be checked after the whole stream was seen, whatever order
// `docker save` wrote the entries in.
type scanner struct {
	blobs     map[string]int64  // hex digest → size, for blobs whose bytes hash to their name
	meta      map[string][]byte // hex digest → bytes of small blobs that look like JSON
	metaTotal int64
	files     map[string][]byte // oci-layout, index.json, manifest.json
	buf       []byte
}

func newScanner() *scanner {
	return &scanner{
		blobs: map[string]int64{},
		meta:  map[string][]byte{},
		files: map[string][]byte{},
	}
}

func malformed(format string, a ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, a...)...)
}

// entryName normalises a tar entry name and refuses names that would land
// outside the directory docker load unpacks into.
func entryName(name string) (string, error) {
	if strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		return "", malformed("unsafe entry name %q", name)
	}
	clean := path.Clean(name)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return "", malformed("unsafe entry name %q", name)
	}
	return clean, nil
}

// scan reads the tar stream r to its end-of-archive marker.
func (s *scanner) scan(r io.Reader) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return malformed("read tar: %v", err)
		}
		name, err := entryName(hdr.Name)
		if err != nil {
			return err
		}
		isMeta := name == ocispec.ImageLayoutFile || name == ocispec.ImageIndexFile || name == legacyManifest
		rest, isBlob := strings.CutPrefix(name, blobDir)
		isBlob = isBlob && validEncoded(rest)
		if !isMeta && !isBlob {
			continue // legacy layer directories, repositories, links: not ours to judge
		}
		if !hdr.FileInfo().Mode().IsRegular() {
			return malformed("%s is not a regular file", name)
		}
		if isMeta {
			if _, dup := s.files[name]; dup {
				return malformed("%s appears twice", name)
			}
			if hdr.Size > maxMetaFile {
				return malformed("%s is larger than %d bytes", name, maxMetaFile)
			}
			b, err := s.readAll(tr, hdr.Size)
			if err != nil {
				return malformed("read %s: %v", name, err)
			}
			s.files[name] = b
			continue
		}
		if _, dup := s.blobs[rest]; dup {
			return malformed("%s appears twice", name)
		}
		if err := s.blob(tr, rest, hdr.Size); err != nil {
			return err
		}
	}
}

// readAll reads the n bytes of an entry; memory grows with what is read,
// not with what the header claims.
func (s *scanner) readAll(r io.Reader, n int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, n))
	if err == nil && int64(len(b)) != n {
		err = io.ErrUnexpectedEOF
	}
	return b, err
}

// blob hashes one blob of size n and checks that it hashes to its name.
func (s *scanner) blob(r io.Reader, name string, n int64) error {
	var sum [sha256.Size]byte
	if n <= maxMetaBlob {
		b, err := s.readAll(r, n)
		if err != nil {
			return malformed("read blob sha256:%s: %v", name, err)
		}
		sum = sha256.Sum256(b)
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' {
			if s.metaTotal+n > maxMetaTotal {
				return malformed("more than %d bytes of small blobs", maxMetaTotal)
			}
			s.metaTotal += n
			s.meta[name] = b
		}
	} else {
		if s.buf == nil {
			s.buf = make([]byte, copyBufSize)
		}
		h := sha256.New()
		got, err := io.CopyBuffer(h, r, s.buf)
		if err == nil && got != n {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return malformed("read blob sha256:%s: %v", name, err)
		}
		h.Sum(sum[:0])
	}
	if got := hex.EncodeToString(sum[:]); got != name {
		return fmt.Errorf("%w: blob sha256:%s holds bytes hashing to sha256:%s", ErrBlobMismatch, name, got)
	}
	s.blobs[name] = n
	return nil
}

// fetch returns the bytes of the JSON blob d references after checking that
// the archive holds it with the descriptor's size.
func (s *scanner) fetch(what string, d ocispec.Descriptor) ([]byte, error) {
	if err := s.present(what, d); err != nil {
		return nil, err
	}
	b, ok := s.meta[d.Digest.Encoded()]
	if !ok {
		return nil, malformed("%s %s is not a JSON document", what, d.Digest)
	}
	return b, nil
}

// present checks that the archive holds the blob d references, with the
// descriptor's size (its bytes were checked against the name while reading).
func (s *scanner) present(what string, d ocispec.Descriptor) error {
	if !validDigest(d.Digest) {
		return malformed("%s digest %q is not sha256:<64 hex>", what, d.Digest)
	}
	size, ok := s.blobs[d.Digest.Encoded()]
	if !ok {
		return fmt.Errorf("%w: %s %s (%s)", ErrMissingBlob, what, d.Digest, blobPath(d.Digest))
	}
	if size != d.Size {
		return fmt.Errorf("%w: %s %s has %d bytes, its descriptor says %d", ErrBlobMismatch, what, d.Digest, size, d.Size)
	}
	return nil
}

func decodeJSON(what string, b []byte, v any) error {
	if err := archiveJSON.Decode(b, v); err != nil {
		return malformed("parse %s: %v", what, err)
	}
	return nil
}

// isLinuxAmd64 reports whether p is linux/amd64 without a variant;
// os.version and os.features are not read (Linux images do not use them).
func isLinuxAmd64(p ocispec.Platform) bool {
	return p.OS == "linux" && p.Architecture == "amd64" && p.Variant == ""
}

func platformString(p ocispec.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// identity checks the records of a scanned archive against each other and
// the blobs, and returns the image's two identities. See Identify for the
// list of checks.
func (s *scanner) identity() (Identity, error) {
	layout, ok := s.files[ocispec.ImageLayoutFile]
	if !ok {
		return Identity{}, malformed("no %s: not an OCI layout as docker save (Docker 25 or later) writes it; the legacy form cannot prove the manifest digest", ocispec.ImageLayoutFile)
	}
	var lay ocispec.ImageLayout
	if err := decodeJSON(ocispec.ImageLayoutFile, layout, &lay); err != nil {
		return Identity{}, err
	}
	if lay.Version != ocispec.ImageLayoutVersion {
		return Identity{}, malformed("%s has imageLayoutVersion %q, want %s", ocispec.ImageLayoutFile, lay.Version, ocispec.ImageLayoutVersion)
	}

	raw, ok := s.files[ocispec.ImageIndexFile]
	if !ok {
		return Identity{}, malformed("no %s", ocispec.ImageIndexFile)
	}
	var top ocispec.Index
	if err := decodeJSON(ocispec.ImageIndexFile, raw, &top); err != nil {
		return Identity{}, err
	}
	if top.SchemaVersion != 2 || (top.MediaType != "" && top.MediaType != ocispec.MediaTypeImageIndex) {
		return Identity{}, malformed("%s is not an OCI image index (schemaVersion %d, mediaType %q)", ocispec.ImageIndexFile, top.SchemaVersion, top.MediaType)
	}
	// Several descriptors may name the same image (one per tag); more than
	// one distinct digest is more than one image.
	var root ocispec.Descriptor
	for i, d := range top.Manifests {
		if i > 0 && d.Digest != root.Digest {
			return Identity{}, fmt.Errorf("%w: %s lists %s and %s", ErrPlatform, ocispec.ImageIndexFile, root.Digest, d.Digest)
		}
		if i > 0 && (d.Size != root.Size || d.MediaType != root.MediaType) {
			return Identity{}, fmt.Errorf("%w: %s describes %s twice, differently", ErrInconsistent, ocispec.ImageIndexFile, d.Digest)
		}
		if d.Platform != nil && !isLinuxAmd64(*d.Platform) {
			return Identity{}, fmt.Errorf("%w: %s lists an image for %s", ErrPlatform, ocispec.ImageIndexFile, platformString(*d.Platform))
		}
		root = d
	}
	if len(top.Manifests) == 0 {
		return Identity{}, malformed("%s lists no image", ocispec.ImageIndexFile)
	}

	id := Identity{ManifestDigest: root.Digest.String()}
	mdesc := root
	if isIndexType(root.MediaType) {
		// The containerd image store saves an image by its index; the
		// index is the image's identity there, and it must hold exactly one
		// platform manifest, linux/amd64, plus any attestation manifests.
		b, err := s.fetch("image index", root)
		if err != nil {
			return Identity{}, err
		}
		var ix ocispec.Index
		if err := decodeJSON("image index "+root.Digest.String(), b, &ix); err != nil {
			return Identity{}, err
		}
		if ix.SchemaVersion != 2 || (ix.MediaType != "" && ix.MediaType != root.MediaType) {
			return Identity{}, malformed("image index %s: schemaVersion %d, mediaType %q", root.Digest, ix.SchemaVersion, ix.MediaType)
		}
		if mdesc, err = s.platformImage(root.Digest, ix); err != nil {
			return Identity{}, err
		}
	}
	if !isManifestType(mdesc.MediaType) {
		return Identity{}, malformed("descriptor %s has media type %q, want an image manifest or index", mdesc.Digest, mdesc.MediaType)
	}
	b, err := s.fetch("image manifest", mdesc)
	if err != nil {
		return Identity{}, err
	}
	var m manifestBlob
	if err := decodeJSON("image manifest "+mdesc.Digest.String(), b, &m); err != nil {
		return Identity{}, err
	}
	if m.SchemaVersion != 2 || (m.MediaType != "" && m.MediaType != mdesc.MediaType) || m.Manifests != nil {
		return Identity{}, malformed("image manifest %s: schemaVersion %d, mediaType %q, want %q", mdesc.Digest, m.SchemaVersion, m.MediaType, mdesc.MediaType)
	}

	if !isConfigType(m.Config.MediaType) {
		return Identity{}, malformed("config descriptor has media type %q", m.Config.MediaType)
	}
	cb, err := s.fetch("image config", m.Config)
	if err != nil {
		return Identity{}, err
	}
	var cfg imageConfig
	if err := decodeJSON("image config "+m.Config.Digest.String(), cb, &cfg); err != nil {
		return Identity{}, err
	}
	if !isLinuxAmd64(cfg.Platform) {
		return Identity{}, fmt.Errorf("%w: image config %s is for %s", ErrPlatform, m.Config.Digest, platformString(cfg.Platform))
	}
	id.ConfigDigest = m.Config.Digest.String()

	if len(m.Layers) == 0 {
		return Identity{}, malformed("image manifest %s lists no layers", mdesc.Digest)
	}
	if cfg.RootFS.Type != "layers" || len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return Identity{}, fmt.Errorf("%w: image config lists %d diff_ids (rootfs type %q) for %d layers",
			ErrInconsistent, len(cfg.RootFS.DiffIDs), cfg.RootFS.Type, len(m.Layers))
	}
	for i, l := range m.Layers {
		uncompressed, known := layerMediaTypes[l.MediaType]
		if !known {
			return Identity{}, malformed("layer %d has media type %q", i, l.MediaType)
		}
		if err := s.present(fmt.Sprintf("layer %d", i), l); err != nil {
			return Identity{}, err
		}
		if uncompressed && cfg.RootFS.DiffIDs[i] != l.Digest {
			return Identity{}, fmt.Errorf("%w: layer %d is %s but the config's diff_id is %s", ErrInconsistent, i, l.Digest, cfg.RootFS.DiffIDs[i])
		}
	}

	if err := s.checkLegacy(m.Manifest); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// isUnknownPlatform reports whether p is the platform BuildKit gives an
// attestation manifest: os and architecture "unknown".
func isUnknownPlatform(p *ocispec.Platform) bool {
	return p != nil && p.OS == "unknown" && p.Architecture == "unknown" && p.Variant == ""
}

// isAttestation reports whether d carries the annotation BuildKit puts on
// an attestation manifest's descriptor.
func isAttestation(d ocispec.Descriptor) bool {
	return d.Annotations[annotationReferenceType] == referenceTypeAttestation
}

// platformImage returns the one image manifest of the image index ix
// (digest root): exactly one descriptor for linux/amd64, and besides it only
// attestation manifests as buildx adds them by default (platform
// unknown/unknown and the annotation vnd.docker.reference.type:
// attestation-manifest). An attestation's blobs need not be in the archive
// (if present, they were hashed and must have the descriptor's size); they
// are never read as an image. An attestation that names the manifest it
// attests (vnd.docker.reference.digest) must name that linux/amd64
// manifest: one naming anything else is a record of another image, and an
// index mixing records of several images is not one image's.
func (s *scanner) platformImage(root digest.Digest, ix ocispec.Index) (ocispec.Descriptor, error) {
	var img ocispec.Descriptor
	images := 0
	var attests []ocispec.Descriptor
	for _, d := range ix.Manifests {
		attest := isAttestation(d)
		switch {
		case attest && !isUnknownPlatform(d.Platform):
			return ocispec.Descriptor{}, fmt.Errorf("%w: image index %s lists %s as an attestation manifest for %s; attestations are for unknown/unknown",
				ErrPlatform, root, d.Digest, describePlatform(d.Platform))
		case attest:
			if !isManifestType(d.MediaType) {
				return ocispec.Descriptor{}, malformed("attestation manifest %s has media type %q, want an image manifest", d.Digest, d.MediaType)
			}
			if !validDigest(d.Digest) {
				return ocispec.Descriptor{}, malformed("attestation manifest digest %q is not sha256:<64 hex>", d.Digest)
			}
			if _, held := s.blobs[d.Digest.Encoded()]; held {
				if err := s.present("attestation manifest", d); err != nil {
					return ocispec.Descriptor{}, err
				}
			}
			attests = append(attests, d)
		case isUnknownPlatform(d.Platform):
			return ocispec.Descriptor{}, fmt.Errorf("%w: image index %s lists %s for unknown/unknown without the annotation %s: %s",
				ErrPlatform, root, d.Digest, annotationReferenceType, referenceTypeAttestation)
		case d.Platform == nil || !isLinuxAmd64(*d.Platform):
			return ocispec.Descriptor{}, fmt.Errorf("%w: image index %s lists a manifest for %s", ErrPlatform, root, describePlatform(d.Platform))
		default:
			images++
			img = d
		}
	}
	if images != 1 {
		return ocispec.Descriptor{}, fmt.Errorf("%w: image index %s lists %d linux/amd64 images", ErrPlatform, root, images)
	}
	for _, a := range attests {
		if a.Digest == img.Digest {
			return ocispec.Descriptor{}, fmt.Errorf("%w: image index %s lists %s both as the linux/amd64 image and as an attestation manifest",
				ErrInconsistent, root, img.Digest)
		}
		ref, ok := a.Annotations[annotationReferenceDigest]
		if !ok {
			continue
		}
		if !validDigest(digest.Digest(ref)) {
			return ocispec.Descriptor{}, fmt.Errorf("%w: attestation manifest %s of image index %s attests a malformed digest (%s is not sha256:<64 hex>)",
				ErrInconsistent, a.Digest, root, annotationReferenceDigest)
		}
		if digest.Digest(ref) != img.Digest {
			return ocispec.Descriptor{}, fmt.Errorf("%w: attestation manifest %s attests %s, which is not the image manifest %s of image index %s",
				ErrInconsistent, a.Digest, ref, img.Digest, root)
		}
	}
	return img, nil
}

func describePlatform(p *ocispec.Platform) string {
	if p == nil {
		return "no platform"
	}
	return platformString(*p)
}

// checkLegacy checks that manifest.json, which docker load reads, names
// exactly the OCI manifest's config and layer blobs, in order.
func (s *scanner) checkLegacy(m ocispec.Manifest) error {
	raw, ok := s.files[legacyManifest]
	if !ok {
		return malformed("no %s (docker load needs it)", legacyManifest)
	}
	var entries []legacyImage
	if err := decodeJSON(legacyManifest, raw, &entries); err != nil {
		return err
	}
	if len(entries) != 1 {
		return fmt.Errorf("%w: %s lists %d images", ErrPlatform, legacyManifest, len(entries))
	}
	e := entries[0]
	if want := blobPath(m.Config.Digest); path.Clean(e.Config) != want {
		return fmt.Errorf("%w: %s names config %q, the OCI manifest %q", ErrInconsistent, legacyManifest, e.Config, want)
	}
	if len(e.Layers) != len(m.Layers) {
		return fmt.Errorf("%w: %s lists %d layers, the OCI manifest %d", ErrInconsistent, legacyManifest, len(e.Layers), len(m.Layers))
	}
	for i, l := range m.Layers {
		if want := blobPath(l.Digest); path.Clean(e.Layers[i]) != want {
			return fmt.Errorf("%w: %s names layer %d %q, the OCI manifest %q", ErrInconsistent, legacyManifest, i, e.Layers[i], want)
		}
	}
	return nil
}
