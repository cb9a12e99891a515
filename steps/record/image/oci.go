package image

import (
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// Media types of the Docker (schema 2) records `docker save` may write
// besides the OCI ones of ocispec. image-spec does not define them; like
// containerd's core/images, this package names the few it reads.
const (
	mediaTypeDockerList    = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeDockerManif   = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerConfig  = "application/vnd.docker.container.image.v1+json"
	mediaTypeDockerLayer   = "application/vnd.docker.image.rootfs.diff.tar"
	mediaTypeDockerLayerGz = "application/vnd.docker.image.rootfs.diff.tar.gzip"
)

// The annotations BuildKit (and so buildx, by default) puts on an
// attestation manifest's descriptor in an image index: its type, and the
// digest of the platform manifest it attests.
const (
	annotationReferenceType   = "vnd.docker.reference.type"
	annotationReferenceDigest = "vnd.docker.reference.digest"
	referenceTypeAttestation  = "attestation-manifest"
)

// Names in the archive: the OCI layout's files and the legacy manifest
// docker load reads.
const (
	legacyManifest = "manifest.json"
	blobDir        = ocispec.ImageBlobsDir + "/" + string(digest.SHA256) + "/"
)

// layerMediaTypes lists the layer types accepted, and whether the blob is
// the uncompressed tar (so its digest must equal the config's diff_id).
var layerMediaTypes = map[string]bool{
	ocispec.MediaTypeImageLayer:     true,
	mediaTypeDockerLayer:            true,
	ocispec.MediaTypeImageLayerGzip: false,
	ocispec.MediaTypeImageLayerZstd: false,
	mediaTypeDockerLayerGz:          false,
}

// manifestBlob is an image manifest as read from the archive. Manifests
// is not part of an image manifest: it catches an image index presented
// under a manifest's media type.
type manifestBlob struct {
	ocispec.Manifest
	Manifests []ocispec.Descriptor `json:"manifests,omitempty"`
}

// imageConfig is the part of the Docker/OCI image config (ocispec.Image)
// this package reads: its platform and rootfs.
type imageConfig struct {
	ocispec.Platform
	RootFS ocispec.RootFS `json:"rootfs"`
}

// legacyImage is the part of one element of the legacy manifest.json,
// which docker load of every engine version reads, that this package
// checks. RepoTags is not read: docker save writes null for an untagged
// image, and the strict decoder refuses null where a list is declared.
type legacyImage struct {
	Config string   `json:"Config"`
	Layers []string `json:"Layers"`
}

// archiveJSON decodes every JSON record of an archive: oci-layout,
// index.json, manifest.json and the index, manifest and config blobs. The
// records are image-spec's (and Docker's), which grow keys: the OCI spec
// requires readers to ignore unknown properties, so unknown keys are
// skipped; every key read obeys the strict rules.
var archiveJSON = strictjson.Format{MaxSize: maxMetaBlob, AllowUnknownKeys: true}

// validDigest reports whether d is sha256:<64 lowercase hex>, the only
// digests `docker save` writes and the release manifest names.
func validDigest(d digest.Digest) bool {
	// Validate first: Algorithm panics on a string without a colon.
	return d.Validate() == nil && d.Algorithm() == digest.SHA256
}

// validEncoded reports whether hex is the encoded part of a valid sha256
// digest: 64 lowercase hex.
func validEncoded(hex string) bool { return digest.SHA256.Validate(hex) == nil }

// blobPath is the archive path of the blob with digest d.
func blobPath(d digest.Digest) string { return blobDir + d.Encoded() }

func isIndexType(mt string) bool {
	return mt == ocispec.MediaTypeImageIndex || mt == mediaTypeDockerList
}

func isManifestType(mt string) bool {
	return mt == ocispec.MediaTypeImageManifest || mt == mediaTypeDockerManif
}

func isConfigType(mt string) bool {
	return mt == ocispec.MediaTypeImageConfig || mt == mediaTypeDockerConfig
}
