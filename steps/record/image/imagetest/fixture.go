package imagetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
	"github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/image"
)

// Options describe a fixture Runtime image. Equal options give
// byte-identical archives.
type Options struct {
	// Label makes the image distinct: it is the image config's
	// io.oac.fixture label and the content of /oac/fixture in the first
	// layer, and it seeds the payload. Different labels give different
	// identities.
	Label string
	// PayloadSize is the size of /oac/payload in the second layer:
	// deterministic pseudo-random bytes that gzip compresses about 2:1,
	// for archives of realistic size. Zero keeps the archive a few KiB.
	PayloadSize int64
	// PayloadLayers splits the payload over this many layers (payload-1
	// … payload-N in /oac, each with its own seed), as a real image has
	// several; 0 or 1 keeps the one payload layer.
	PayloadLayers int
	// RepoTag, when set (for example "oac-runtime:fixture"), tags the image
	// in manifest.json and index.json so docker load tags it. Empty loads
	// it untagged, as the installer's Runtime is loaded.
	RepoTag string
	// Attestation writes the archive `docker save` of the containerd
	// image store writes for an image buildx built with its default
	// provenance attestation: index.json lists an image index holding the
	// linux/amd64 manifest and an attestation manifest (platform
	// unknown/unknown, annotations vnd.docker.reference.type:
	// attestation-manifest and vnd.docker.reference.digest: the image
	// manifest), whose one layer is an in-toto statement
	// (application/vnd.in-toto+json) about the image manifest. The
	// identity is then the image's config digest and the index digest.
	Attestation bool
}

// Names docker save writes that image-spec does not define.
const (
	// annotationImageName is the descriptor annotation in which docker
	// save (and containerd) record an image's full name.
	annotationImageName = "io.containerd.image.name"
	// The annotations of an attestation manifest's descriptor in an image
	// index, as BuildKit writes them.
	annotationReferenceType   = "vnd.docker.reference.type"
	annotationReferenceDigest = "vnd.docker.reference.digest"
	referenceTypeAttestation  = "attestation-manifest"
	// legacyManifest is the manifest.json every docker load reads.
	legacyManifest = "manifest.json"
)

// copyBufSize is the buffer of the copies that stream a large payload.
const copyBufSize = 1 << 20

// fixtureEpoch is the timestamp of every fixture file and record.
var fixtureEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// Entry is one file of an archive to write; Open yields exactly Size
// bytes. A non-zero Typeflag other than TypeReg writes a link or directory.
type Entry struct {
	Name     string
	Size     int64
	Open     func() io.Reader
	Typeflag byte
	Linkname string
}

// BytesEntry is a regular file named name holding b.
func BytesEntry(name string, b []byte) Entry {
	return Entry{Name: name, Size: int64(len(b)), Open: func() io.Reader { return bytes.NewReader(b) }}
}

// WriteArchive writes entries as a tar stream.
func WriteArchive(w io.Writer, entries []Entry) error {
	tw := tar.NewWriter(w)
	buf := make([]byte, copyBufSize)
	for _, e := range entries {
		hdr := &tar.Header{
			Name:     e.Name,
			Mode:     0o644,
			ModTime:  fixtureEpoch,
			Typeflag: e.Typeflag,
			Linkname: e.Linkname,
			Format:   tar.FormatPAX,
		}
		switch e.Typeflag {
		case 0, tar.TypeReg:
			hdr.Typeflag = tar.TypeReg
			hdr.Size = e.Size
		case tar.TypeDir:
			hdr.Mode = 0o755
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := io.CopyBuffer(tw, e.Open(), buf); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

// Blob is content with its digest, produced on demand: Open yields its
// Size bytes.
type Blob struct {
	MediaType string
	Digest    digest.Digest
	Size      int64
	Open      func() io.Reader
}

func (b Blob) descriptor() ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: b.MediaType, Digest: b.Digest, Size: b.Size}
}

// blobPath is the archive path of the blob with digest d.
func blobPath(d digest.Digest) string {
	return path.Join(ocispec.ImageBlobsDir, d.Algorithm().String(), d.Encoded())
}

func (b Blob) entry() Entry {
	return Entry{Name: blobPath(b.Digest), Size: b.Size, Open: b.Open}
}

// newBlob hashes the content open yields once to name it.
func newBlob(mediaType string, open func() io.Reader) (Blob, error) {
	d := digest.SHA256.Digester()
	n, err := io.CopyBuffer(d.Hash(), open(), make([]byte, copyBufSize))
	if err != nil {
		return Blob{}, err
	}
	return Blob{mediaType, d.Digest(), n, open}, nil
}

func jsonBlob(mediaType string, v any) (Blob, []byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return Blob{}, nil, err
	}
	bl, err := newBlob(mediaType, func() io.Reader { return bytes.NewReader(b) })
	return bl, b, err
}

// layerTar returns a function producing an uncompressed layer tar holding
// the directory oac/ and one file.
func layerTar(file string, size int64, open func() io.Reader) func() io.Reader {
	return func() io.Reader {
		pr, pw := io.Pipe()
		go func() {
			pw.CloseWithError(writeLayer(pw, file, size, open()))
		}()
		return pr
	}
}

func writeLayer(w io.Writer, file string, size int64, r io.Reader) error {
	tw := tar.NewWriter(w)
	hdrs := []*tar.Header{
		{Name: "oac/", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: fixtureEpoch},
		{Name: "oac/" + file, Typeflag: tar.TypeReg, Mode: 0o644, Size: size, ModTime: fixtureEpoch},
	}
	for _, h := range hdrs {
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
	}
	if _, err := io.CopyBuffer(tw, r, make([]byte, copyBufSize)); err != nil {
		return err
	}
	return tw.Close()
}

// LegacyEntry is one element of the legacy manifest.json as docker save
// writes it (RepoTags null for an untagged image).
type LegacyEntry struct {
	Config   string   `json:"Config"`
	RepoTags []string `json:"RepoTags"`
	Layers   []string `json:"Layers"`
}

// Image is the parts of a fixture archive, built from Go values so that
// tests can alter any of them consistently: change its fields, then
// write its Entries with WriteArchive.
type Image struct {
	Layers []Blob
	Config map[string]any
	Tag    string

	// Hooks for tests that need an archive altered yet self-consistent.
	EditManifest func(*ocispec.Manifest)
	EditIndex    func(*ocispec.Index)
	EditLegacy   func(*[]LegacyEntry)
	// Nested wraps the manifest in an image index listing it (as
	// linux/amd64) plus NestedExtra, as the containerd store saves.
	Nested      bool
	NestedExtra []ocispec.Descriptor
	// Attest adds a buildx-like attestation manifest to the nested index
	// (after EditAttestation changed its descriptor); its blobs are
	// written unless OmitAttestationBlobs. EditNested and EditNestedJSON
	// change the nested index, as a value and then as JSON.
	Attest               bool
	EditAttestation      func(*ocispec.Descriptor)
	EditNested           func(*ocispec.Index)
	EditNestedJSON       func([]byte) []byte
	OmitAttestationBlobs bool
	attestationBlobs     []Blob // set by parts
	label                string
}

type historyEntry struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
}

// NewImage returns the parts of the image opts describe.
func NewImage(opts Options) (*Image, error) {
	label := []byte(opts.Label + "\n")
	l1, err := newBlob(ocispec.MediaTypeImageLayer, layerTar("fixture", int64(len(label)), func() io.Reader { return bytes.NewReader(label) }))
	if err != nil {
		return nil, fmt.Errorf("build fixture layer: %w", err)
	}
	psize := opts.PayloadSize
	if psize <= 0 {
		psize = 64
	}
	created := fixtureEpoch.Format(time.RFC3339)
	layers := []Blob{l1}
	history := []historyEntry{{created, "oac fixture: label"}}
	if opts.PayloadLayers <= 1 {
		l2, err := newBlob(ocispec.MediaTypeImageLayer, layerTar("payload", psize, func() io.Reader { return newPayload(opts.Label, psize) }))
		if err != nil {
			return nil, fmt.Errorf("build fixture payload layer: %w", err)
		}
		layers = append(layers, l2)
		history = append(history, historyEntry{created, "oac fixture: payload"})
	}
	for i := 1; opts.PayloadLayers > 1 && i <= opts.PayloadLayers; i++ {
		n := psize / int64(opts.PayloadLayers)
		if i == opts.PayloadLayers {
			n = psize - n*int64(opts.PayloadLayers-1)
		}
		name, seed := fmt.Sprintf("payload-%d", i), fmt.Sprintf("%s/%d", opts.Label, i)
		l, err := newBlob(ocispec.MediaTypeImageLayer, layerTar(name, n, func() io.Reader { return newPayload(seed, n) }))
		if err != nil {
			return nil, fmt.Errorf("build fixture payload layer %d: %w", i, err)
		}
		layers = append(layers, l)
		history = append(history, historyEntry{created, "oac fixture: " + name})
	}
	cfg := map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      created,
		"config": map[string]any{
			"Env":    []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
			"Labels": map[string]string{"io.oac.fixture": opts.Label},
		},
		"history": history,
	}
	return &Image{Layers: layers, Config: cfg, Tag: opts.RepoTag,
		Nested: opts.Attestation, Attest: opts.Attestation, label: opts.Label}, nil
}

// parts builds the config, manifest and index records over the layers.
// rootfs.diff_ids is set from the layers unless the config already has one.
// root is the blob index.json lists: the manifest, or a nested index.
func (f *Image) parts() (config, mfst, root Blob, ix []byte, legacy []byte, err error) {
	if _, ok := f.Config["rootfs"]; !ok {
		var diffIDs []digest.Digest
		for _, l := range f.Layers {
			diffIDs = append(diffIDs, l.Digest)
		}
		f.Config["rootfs"] = map[string]any{"type": "layers", "diff_ids": diffIDs}
	}
	config, _, err = jsonBlob(ocispec.MediaTypeImageConfig, f.Config)
	if err != nil {
		return
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest, Config: config.descriptor()}
	for _, l := range f.Layers {
		m.Layers = append(m.Layers, l.descriptor())
	}
	if f.EditManifest != nil {
		f.EditManifest(&m)
	}
	mfst, _, err = jsonBlob(ocispec.MediaTypeImageManifest, m)
	if err != nil {
		return
	}
	root = mfst
	if f.Nested {
		md := mfst.descriptor()
		md.Platform = &ocispec.Platform{Architecture: "amd64", OS: "linux"}
		manifests := []ocispec.Descriptor{md}
		f.attestationBlobs = nil
		if f.Attest {
			var ad ocispec.Descriptor
			ad, f.attestationBlobs, err = f.attestation(mfst.Digest)
			if err != nil {
				return
			}
			manifests = append(manifests, ad)
		}
		nix := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2},
			MediaType: ocispec.MediaTypeImageIndex, Manifests: append(manifests, f.NestedExtra...)}
		if f.EditNested != nil {
			f.EditNested(&nix)
		}
		var nb []byte
		if nb, err = json.Marshal(nix); err != nil {
			return
		}
		if f.EditNestedJSON != nil {
			nb = f.EditNestedJSON(nb)
		}
		if root, err = newBlob(ocispec.MediaTypeImageIndex, func() io.Reader { return bytes.NewReader(nb) }); err != nil {
			return
		}
	}
	d := root.descriptor()
	var tags []string
	if f.Tag != "" {
		tags = []string{f.Tag}
		d.Annotations = map[string]string{annotationImageName: f.Tag}
		if i := strings.LastIndex(f.Tag, ":"); i > strings.LastIndex(f.Tag, "/") {
			d.Annotations[ocispec.AnnotationRefName] = f.Tag[i+1:]
		}
	}
	top := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex, Manifests: []ocispec.Descriptor{d}}
	if f.EditIndex != nil {
		f.EditIndex(&top)
	}
	ix, err = json.Marshal(top)
	if err != nil {
		return
	}
	le := LegacyEntry{Config: blobPath(config.Digest), RepoTags: tags}
	for _, l := range f.Layers {
		le.Layers = append(le.Layers, blobPath(l.Digest))
	}
	les := []LegacyEntry{le}
	if f.EditLegacy != nil {
		f.EditLegacy(&les)
	}
	legacy, err = json.Marshal(les)
	return
}

// Media types and predicate of the attestation BuildKit writes.
const (
	MediaTypeInToto     = "application/vnd.in-toto+json"
	annotationPredicate = "in-toto.io/predicate-type"
	predicateSLSA02     = "https://slsa.dev/provenance/v0.2"
)

// attestation builds a provenance attestation manifest for the image
// manifest m as BuildKit does: one layer, an in-toto statement whose
// subject is m; a config for platform unknown/unknown whose diff_ids are
// the layers' digests (BuildKit's attestation config is a placeholder
// image config "included for compatibility"); a descriptor for
// unknown/unknown annotated as an attestation of m. It returns the
// descriptor and the blobs: statement, config, manifest.
func (f *Image) attestation(m digest.Digest) (ocispec.Descriptor, []Blob, error) {
	statement := map[string]any{
		"_type":         "https://in-toto.io/Statement/v0.1",
		"predicateType": predicateSLSA02,
		"subject": []map[string]any{{
			"name":   "pkg:docker/oac-runtime@fixture?platform=linux%2Famd64",
			"digest": map[string]string{"sha256": m.Encoded()},
		}},
		"predicate": map[string]any{
			"builder":   map[string]string{"id": ""},
			"buildType": "https://mobyproject.org/buildkit@v1",
			"metadata": map[string]any{
				"buildInvocationID": "oac-fixture-" + f.label,
				"buildStartedOn":    fixtureEpoch.Format(time.RFC3339),
				"completeness":      map[string]bool{"environment": true, "materials": false, "parameters": true},
			},
		},
	}
	layer, _, err := jsonBlob(MediaTypeInToto, statement)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	config, _, err := jsonBlob(ocispec.MediaTypeImageConfig, map[string]any{
		"architecture": "unknown",
		"os":           "unknown",
		"config":       map[string]any{},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []digest.Digest{layer.Digest}},
	})
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	ld := layer.descriptor()
	ld.Annotations = map[string]string{annotationPredicate: predicateSLSA02}
	mfst, _, err := jsonBlob(ocispec.MediaTypeImageManifest, ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest, Config: config.descriptor(), Layers: []ocispec.Descriptor{ld}})
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	d := mfst.descriptor()
	d.Platform = &ocispec.Platform{Architecture: "unknown", OS: "unknown"}
	d.Annotations = map[string]string{annotationReferenceType: referenceTypeAttestation, annotationReferenceDigest: m.String()}
	if f.EditAttestation != nil {
		f.EditAttestation(&d)
	}
	return d, []Blob{layer, config, mfst}, nil
}

// Entries returns the archive's files in the order docker save writes them
// (the two directories of blobs/, the layers, the config, the manifest,
// the attestation's blobs, a nested index, index.json, manifest.json,
// oci-layout) and the identity of the image they hold.
func (f *Image) Entries() ([]Entry, image.Identity, error) {
	config, mfst, root, ix, legacy, err := f.parts()
	if err != nil {
		return nil, image.Identity{}, err
	}
	es := []Entry{
		{Name: "blobs/", Typeflag: tar.TypeDir},
		{Name: "blobs/sha256/", Typeflag: tar.TypeDir},
	}
	for _, l := range f.Layers {
		es = append(es, l.entry())
	}
	es = append(es, config.entry(), mfst.entry())
	if !f.OmitAttestationBlobs {
		for _, b := range f.attestationBlobs {
			es = append(es, b.entry())
		}
	}
	if root.Digest != mfst.Digest {
		es = append(es, root.entry())
	}
	es = append(es,
		BytesEntry(ocispec.ImageIndexFile, ix),
		BytesEntry(legacyManifest, legacy),
		BytesEntry(ocispec.ImageLayoutFile, []byte(`{"imageLayoutVersion":"`+ocispec.ImageLayoutVersion+`"}`)),
	)
	return es, image.Identity{ConfigDigest: config.Digest.String(), ManifestDigest: root.Digest.String()}, nil
}

// BuildArchive writes to w a Runtime image archive built from bytes,
// in the form `docker save` of Docker 25 or later writes: an OCI layout
// (oci-layout, index.json, blobs/sha256/...) plus the legacy manifest.json
// that docker load of every engine reads. The image is linux/amd64, with
// two uncompressed layers (a file holding the label; the payload), a config
// whose rootfs.diff_ids are the layer digests, and a real config and
// manifest digest, which it returns. With opts.Attestation, index.json
// lists an image index holding the manifest and a buildx-like attestation
// manifest, and the returned manifest digest is the index's. `docker load`
// accepts it; it holds no runnable program.
func BuildArchive(w io.Writer, opts Options) (image.Identity, error) {
	img, err := NewImage(opts)
	if err != nil {
		return image.Identity{}, err
	}
	es, id, err := img.Entries()
	if err != nil {
		return image.Identity{}, fmt.Errorf("build fixture image: %w", err)
	}
	if err := WriteArchive(w, es); err != nil {
		return image.Identity{}, fmt.Errorf("write fixture image archive: %w", err)
	}
	return id, nil
}

// Fixture describes the files WriteFixture wrote: what a release manifest
// says about them.
type Fixture struct {
	image.Identity
	TarPath   string // dir/runtime.tar
	TarSize   int64  // the manifest's unpacked_size
	TarSHA256 string // the manifest's unpacked_sha256 (64 hex)
	GzPath    string // dir/runtime.tar.gz
	GzSize    int64  // the artifact's size
	GzSHA256  string // the artifact's sha256 (64 hex)
}

// WriteFixture builds the fixture archive once and writes it to
// dir/runtime.tar and, gzip-compressed (gzip.BestSpeed, in members of
// 4 MiB of input compressed on all cores), to dir/runtime.tar.gz, each
// through a pending file (safefile.Pending) that is fsynced and renamed
// into place (mode 0600), replacing what was there, with the directory
// fsynced.
func WriteFixture(dir string, opts Options) (Fixture, error) {
	fx := Fixture{TarPath: filepath.Join(dir, "runtime.tar"), GzPath: filepath.Join(dir, "runtime.tar.gz")}
	root, err := safefile.OpenRootTrusted(dir)
	if err != nil {
		return Fixture{}, fmt.Errorf("write fixture: %w", err)
	}
	defer root.Close()
	var files [2]*safefile.Pending
	defer func() {
		for _, p := range files {
			if p != nil {
				p.Discard()
			}
		}
	}()
	for i, p := range []string{fx.TarPath, fx.GzPath} {
		pf, err := root.OpenPending("."+filepath.Base(p)+".tmp-fixture", "fixture")
		if err == nil {
			files[i] = pf
			err = pf.File().Truncate(0)
		}
		if err != nil {
			return Fixture{}, fmt.Errorf("write fixture: %w", err)
		}
	}

	// The archive streams to the tar file and to the parallel compressor.
	gzHash := sha256.New()
	gzCount := &countWriter{w: io.MultiWriter(files[1].File(), gzHash)}
	zw := newPgzipWriter(gzCount, gzip.BestSpeed)
	tarHash := sha256.New()
	tarCount := &countWriter{w: io.MultiWriter(files[0].File(), tarHash, zw)}
	id, err := BuildArchive(tarCount, opts)
	if zerr := zw.Close(); err == nil && zerr != nil {
		err = fmt.Errorf("compress fixture: %w", zerr)
	}
	if err != nil {
		return Fixture{}, err
	}
	fx.Identity = id
	fx.TarSize, fx.TarSHA256 = tarCount.n, hex.EncodeToString(tarHash.Sum(nil))
	fx.GzSize, fx.GzSHA256 = gzCount.n, hex.EncodeToString(gzHash.Sum(nil))
	for i, target := range []string{fx.TarPath, fx.GzPath} {
		if err := files[i].CommitReplace(filepath.Base(target), 0o600); err != nil {
			return Fixture{}, fmt.Errorf("write fixture: %w", err)
		}
		files[i] = nil
	}
	return fx, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
