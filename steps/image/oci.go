package image

import (
	"regexp"
	"strings"
)

// Media types of the records `docker save` writes, in their OCI and Docker
// (schema 2) spellings.
const (
	mediaTypeOCIIndex      = "application/vnd.oci.image.index.v1+json"
	mediaTypeOCIManifest   = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeOCIConfig     = "application/vnd.oci.image.config.v1+json"
	mediaTypeOCILayer      = "application/vnd.oci.image.layer.v1.tar"
	mediaTypeOCILayerGzip  = "application/vnd.oci.image.layer.v1.tar+gzip"
	mediaTypeOCILayerZstd  = "application/vnd.oci.image.layer.v1.tar+zstd"
	mediaTypeDockerList    = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeDockerManif   = "application/vnd.docker.distribution.manifest.v2+json"
	mediaTypeDockerConfig  = "application/vnd.docker.container.image.v1+json"
	mediaTypeDockerLayer   = "application/vnd.docker.image.rootfs.diff.tar"
	mediaTypeDockerLayerGz = "application/vnd.docker.image.rootfs.diff.tar.gzip"

	ociLayoutFile  = "oci-layout"
	ociIndexFile   = "index.json"
	legacyManifest = "manifest.json"
	blobDir        = "blobs/sha256/"
)

// layerMediaTypes lists the layer types accepted, and whether the blob is
// the uncompressed tar (so its digest must equal the config's diff_id).
var layerMediaTypes = map[string]bool{
	mediaTypeOCILayer:      true,
	mediaTypeDockerLayer:   true,
	mediaTypeOCILayerGzip:  false,
	mediaTypeOCILayerZstd:  false,
	mediaTypeDockerLayerGz: false,
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

// index is an OCI image index (index.json, or a nested index blob).
type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType,omitempty"`
	Manifests     []descriptor `json:"manifests"`
}

// manifest is an OCI image manifest.
type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType,omitempty"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
	Manifests     []descriptor `json:"manifests,omitempty"` // present only if the blob is an index
}

// imageConfig is the part of the Docker/OCI image config this package reads.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
	RootFS       struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// legacyEntry is one element of the legacy manifest.json that docker load
// of every engine version reads.
type legacyEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

var (
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	hexRE    = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// validDigest reports whether d is sha256:<64 lowercase hex>.
func validDigest(d string) bool { return digestRE.MatchString(d) }

// digestHex returns the hex part of a valid digest.
func digestHex(d string) string { return strings.TrimPrefix(d, "sha256:") }

// blobPath is the archive path of the blob with digest d.
func blobPath(d string) string { return blobDir + digestHex(d) }

func isIndexType(mt string) bool { return mt == mediaTypeOCIIndex || mt == mediaTypeDockerList }

func isManifestType(mt string) bool { return mt == mediaTypeOCIManifest || mt == mediaTypeDockerManif }

func isConfigType(mt string) bool { return mt == mediaTypeOCIConfig || mt == mediaTypeDockerConfig }
