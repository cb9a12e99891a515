package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// MaxMetadataSize is the largest manifest.json or SHA256SUMS accepted, in
// bytes.
const MaxMetadataSize = 1 << 20

// Platform is the only platform a release may be built for.
const Platform = "linux/amd64"

// ImageRuntime is the images / image_manifest_digests key of the Runtime.
const ImageRuntime = "runtime"

// Manifest is a validated manifest.json (CONTRACT §1.1). Field order is the
// sorted key order Marshal writes.
type Manifest struct {
	// ArtifactBaseURL is the versioned HTTPS release directory artifacts are
	// redirected to, or "" for an offline build.
	ArtifactBaseURL string `json:"artifact_base_url"`
	// Artifacts maps a logical path to its released file.
	Artifacts map[string]Artifact `json:"artifacts"`
	// ImageManifestDigests maps an image name to its OCI manifest or index
	// digest; Images to its Docker config digest. Both have the same keys.
	ImageManifestDigests map[string]string `json:"image_manifest_digests"`
	Images               map[string]string `json:"images"`
	Microsandbox         Microsandbox      `json:"microsandbox"`
	Platform             string            `json:"platform"`
	// RuntimeRef is the microsandbox reference oac-runtime@sha256:<64hex>.
	RuntimeRef   string `json:"runtime_ref"`
	SourceCommit string `json:"source_commit"`
	SourceTree   string `json:"source_tree"`

	// Raw holds the bytes the manifest was parsed from (nil when built in
	// memory). They, not a re-serialisation, are what SHA256SUMS covers.
	Raw []byte `json:"-"`
}

// Artifact is one released file. UnpackedSHA256 and UnpackedSize describe
// the gunzipped runtime.tar of images/runtime.tar.gz and are empty for
// other artifacts.
type Artifact struct {
	Filename       string `json:"filename"`
	SHA256         string `json:"sha256"`
	Size           int64  `json:"size"`
	UnpackedSHA256 string `json:"unpacked_sha256,omitempty"`
	UnpackedSize   int64  `json:"unpacked_size,omitempty"`
}

// Microsandbox pins the microsandbox runtime: its version and the sha256 of
// the msb binary and of the libkrunfw firmware.
type Microsandbox struct {
	FirmwareSHA256 string `json:"firmware_sha256"`
	RuntimeSHA256  string `json:"runtime_sha256"`
	Version        string `json:"version"`
}

// ParseManifest validates manifest.json bytes by every rule of CONTRACT
// §1.1: size limit, platform, both 40-hex source ids, artifact_base_url,
// every artifact entry, an entry for every catalog path of every provider
// except the policy role, both image identities and the microsandbox pins.
// Failures are *FieldError of kind ErrInvalidManifest, or ErrTooLarge.
func ParseManifest(data []byte) (*Manifest, error) {
	if len(data) > MaxMetadataSize {
		return nil, fmt.Errorf("manifest.json: %w (%d bytes)", ErrTooLarge, len(data))
	}
	var doc manifestFile
	if err := manifestFormat.Decode(data, &doc); err != nil {
		return nil, fromStrict(err, ErrInvalidManifest, "manifest.json")
	}
	m := &Manifest{
		ArtifactBaseURL: doc.ArtifactBaseURL, ImageManifestDigests: doc.ImageManifestDigests, Images: doc.Images,
		Microsandbox: doc.Microsandbox, Platform: doc.Platform, RuntimeRef: doc.RuntimeRef,
		SourceCommit: doc.SourceCommit, SourceTree: doc.SourceTree, Raw: bytes.Clone(data),
	}
	for _, f := range []struct {
		name, value string
		check       func(string) bool
		rule        string
	}{
		{"source_commit", m.SourceCommit, IsCommit, "40 lowercase hex digits"},
		{"source_tree", m.SourceTree, IsCommit, "40 lowercase hex digits"},
		{"platform", m.Platform, func(s string) bool { return s == Platform }, Platform},
		{"runtime_ref", m.RuntimeRef, IsRuntimeRef, "oac-runtime@sha256:<64 lowercase hex>"},
	} {
		if !f.check(f.value) {
			return nil, manifestErr(f.name, "must be %s", f.rule)
		}
	}
	if m.ArtifactBaseURL != "" {
		if err := CheckArtifactBaseURL(m.ArtifactBaseURL); err != nil {
			return nil, manifestErr("artifact_base_url", "%v", err)
		}
	}
	for _, dm := range []struct {
		name string
		m    map[string]string
	}{{"images", m.Images}, {"image_manifest_digests", m.ImageManifestDigests}} {
		for _, k := range sortedKeys(dm.m) {
			if !IsDigest(dm.m[k]) {
				return nil, manifestErr(dm.name+"."+k, "must be sha256:<64 lowercase hex>")
			}
		}
	}
	for name := range m.Images {
		if _, ok := m.ImageManifestDigests[name]; !ok {
			return nil, manifestErr("image_manifest_digests."+name, "missing (images has it)")
		}
	}
	for name := range m.ImageManifestDigests {
		if _, ok := m.Images[name]; !ok {
			return nil, manifestErr("images."+name, "missing (image_manifest_digests has it)")
		}
	}
	if _, ok := m.Images[ImageRuntime]; !ok {
		return nil, manifestErr("images."+ImageRuntime, "missing")
	}
	for _, f := range []struct {
		key, value string
		hex        bool
		rule       string
	}{
		{"version", m.Microsandbox.Version, false, "a non-empty string"},
		{"runtime_sha256", m.Microsandbox.RuntimeSHA256, true, "64 lowercase hex digits"},
		{"firmware_sha256", m.Microsandbox.FirmwareSHA256, true, "64 lowercase hex digits"},
	} {
		if f.hex && !IsSHA256(f.value) || !f.hex && (f.value == "" || !printable(f.value)) {
			return nil, manifestErr("microsandbox."+f.key, "must be %s", f.rule)
		}
	}
	var err error
	if m.Artifacts, err = checkArtifacts(doc.Artifacts, m.SourceCommit); err != nil {
		return nil, err
	}
	return m, nil
}

// manifestFile is manifest.json as written. The platform's build may add
// keys, so unknown keys are skipped (the old installer ignored them too);
// duplicates and case variants of known keys are refused.
type manifestFile struct {
	ArtifactBaseURL      string                 `json:"artifact_base_url"`
	Artifacts            map[string]artifactDoc `json:"artifacts"`
	ImageManifestDigests map[string]string      `json:"image_manifest_digests"`
	Images               map[string]string      `json:"images"`
	Microsandbox         Microsandbox           `json:"microsandbox"`
	Platform             string                 `json:"platform"`
	RuntimeRef           string                 `json:"runtime_ref"`
	SourceCommit         string                 `json:"source_commit"`
	SourceTree           string                 `json:"source_tree"`
}

// artifactDoc tells an absent unpacked key from a present zero one.
type artifactDoc struct {
	Filename       string  `json:"filename"`
	SHA256         string  `json:"sha256"`
	Size           int64   `json:"size"`
	UnpackedSHA256 *string `json:"unpacked_sha256,omitempty"`
	UnpackedSize   *int64  `json:"unpacked_size,omitempty"`
}

var manifestFormat = strictjson.Format{MaxSize: MaxMetadataSize, AllowUnknownKeys: true}

func checkArtifacts(docs map[string]artifactDoc, commit string) (map[string]Artifact, error) {
	out := make(map[string]Artifact, len(docs))
	byName := make(map[string]string, len(docs))
	for _, path := range sortedKeys(docs) {
		f := "artifacts." + path
		if err := CheckRelativePath(path); err != nil {
			return nil, manifestErr(f, "logical path %v", err)
		}
		a, err := checkArtifact(f, docs[path], commit, path == PathRuntimeImage)
		if err != nil {
			return nil, err
		}
		if other, dup := byName[a.Filename]; dup {
			return nil, manifestErr(f+".filename", "%q is also the file name of %s", a.Filename, other)
		}
		byName[a.Filename] = path
		out[path] = a
	}
	for _, p := range Providers() {
		for _, spec := range Catalog(p) {
			if spec.Role == RolePolicy {
				continue
			}
			if _, ok := out[spec.Path]; !ok {
				return nil, manifestErr("artifacts."+spec.Path, "missing (needed by %s nodes)", p)
			}
		}
	}
	return out, nil
}

func checkArtifact(f string, d artifactDoc, commit string, unpacked bool) (Artifact, error) {
	a := Artifact{Filename: d.Filename, SHA256: d.SHA256, Size: d.Size}
	if err := CheckFileName(a.Filename); err != nil {
		return a, manifestErr(f+".filename", "%v", err)
	}
	if !strings.Contains(a.Filename, commit) {
		return a, manifestErr(f+".filename", "%q does not contain the source commit", a.Filename)
	}
	if !IsSHA256(a.SHA256) {
		return a, manifestErr(f+".sha256", "must be 64 lowercase hex digits")
	}
	if a.Size < 1 {
		return a, manifestErr(f+".size", "%d is outside [1, %d]", a.Size, int64(math.MaxInt64))
	}
	if !unpacked && d.UnpackedSHA256 == nil && d.UnpackedSize == nil {
		return a, nil
	}
	if d.UnpackedSHA256 == nil {
		return a, manifestErr(f+".unpacked_sha256", "missing")
	}
	if a.UnpackedSHA256 = *d.UnpackedSHA256; !IsSHA256(a.UnpackedSHA256) {
		return a, manifestErr(f+".unpacked_sha256", "must be 64 lowercase hex digits")
	}
	if d.UnpackedSize == nil {
		return a, manifestErr(f+".unpacked_size", "missing")
	}
	if a.UnpackedSize = *d.UnpackedSize; a.UnpackedSize < 1 {
		return a, manifestErr(f+".unpacked_size", "%d is outside [1, %d]", a.UnpackedSize, int64(math.MaxInt64))
	}
	return a, nil
}

// CheckFileName checks a released file name: 1 to 255 characters of
// [A-Za-z0-9._-], and neither "." nor "..".
func CheckFileName(name string) error {
	if name == "" || len(name) > 255 {
		return fmt.Errorf("file name must have 1 to 255 characters")
	}
	if name == "." || name == ".." {
		return fmt.Errorf("file name %q is not allowed", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("file name %q may hold only [A-Za-z0-9._-]", name)
		}
	}
	return nil
}

// CheckArtifactBaseURL checks a non-empty artifact_base_url: an absolute
// https URL with a host, without credentials, query or fragment, with a
// non-empty path none of whose segments is "latest".
func CheckArtifactBaseURL(s string) error {
	if strings.ContainsAny(s, "?#\\ \t\r\n") {
		return fmt.Errorf("%q must not hold a query, fragment, backslash or space", s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("malformed URL")
	}
	switch {
	case u.Scheme != "https":
		return fmt.Errorf("must be an https URL")
	case u.Opaque != "" || u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("must name a host")
	case u.User != nil:
		return fmt.Errorf("must not hold credentials")
	case strings.Trim(u.Path, "/") == "":
		return fmt.Errorf("must have a non-empty path (a versioned release directory)")
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if strings.EqualFold(seg, "latest") {
			return fmt.Errorf("must be versioned, not a \"latest\" path")
		}
	}
	return nil
}

// ArtifactURL returns the URL of the released file name under base:
// base + "/" + filename.
func ArtifactURL(base, filename string) string {
	return strings.TrimRight(base, "/") + "/" + filename
}

// ConsoleArtifactBaseURL is the artifact_base_url an installer uses in place
// of the manifest's own: the console's versioned artifact directory
// <sourceURL>/node-install/releases/<sourceCommit>/artifacts, so that nodes
// always download through their console, which redirects what it does not
// hold to the manifest's base.
func ConsoleArtifactBaseURL(sourceURL, sourceCommit string) string {
	return strings.TrimRight(sourceURL, "/") + "/node-install/releases/" + sourceCommit + "/artifacts"
}

// ByFileName returns the logical path and entry of the artifact released as
// filename.
func (m *Manifest) ByFileName(filename string) (string, Artifact, bool) {
	for path, a := range m.Artifacts {
		if a.Filename == filename {
			return path, a, true
		}
	}
	return "", Artifact{}, false
}

// Marshal writes the manifest as the platform does: sorted keys, 2-space
// indent, trailing newline. The result is parsed back, so Marshal refuses a
// manifest ParseManifest would refuse.
func (m *Manifest) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encode manifest.json: %w", err)
	}
	if _, err := ParseManifest(buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// printable reports whether s holds no control characters.
func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
