package release

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"sort"
	"strings"
	"unicode/utf8"
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
	if !utf8.Valid(data) {
		return nil, manifestErr("manifest.json", "not valid UTF-8")
	}
	top, err := object(data)
	if err != nil {
		return nil, manifestErr("manifest.json", "%v", err)
	}
	m := &Manifest{Raw: bytes.Clone(data)}
	field := func(name string) (json.RawMessage, error) {
		raw, ok := top[name]
		if !ok {
			return nil, manifestErr(name, "missing")
		}
		return raw, nil
	}
	strField := func(name string, check func(string) bool, rule string) (string, error) {
		raw, err := field(name)
		if err != nil {
			return "", err
		}
		s, err := str(raw)
		if err != nil {
			return "", manifestErr(name, "%v", err)
		}
		if check != nil && !check(s) {
			return "", manifestErr(name, "must be %s", rule)
		}
		return s, nil
	}
	if m.SourceCommit, err = strField("source_commit", IsCommit, "40 lowercase hex digits"); err != nil {
		return nil, err
	}
	if m.SourceTree, err = strField("source_tree", IsCommit, "40 lowercase hex digits"); err != nil {
		return nil, err
	}
	if m.Platform, err = strField("platform", func(s string) bool { return s == Platform }, Platform); err != nil {
		return nil, err
	}
	if m.ArtifactBaseURL, err = strField("artifact_base_url", nil, ""); err != nil {
		return nil, err
	}
	if m.ArtifactBaseURL != "" {
		if err := CheckArtifactBaseURL(m.ArtifactBaseURL); err != nil {
			return nil, manifestErr("artifact_base_url", "%v", err)
		}
	}
	if m.RuntimeRef, err = strField("runtime_ref", IsRuntimeRef, "oac-runtime@sha256:<64 lowercase hex>"); err != nil {
		return nil, err
	}
	if m.Images, err = parseDigestMap(top, "images"); err != nil {
		return nil, err
	}
	if m.ImageManifestDigests, err = parseDigestMap(top, "image_manifest_digests"); err != nil {
		return nil, err
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
	if m.Microsandbox, err = parseMicrosandbox(top); err != nil {
		return nil, err
	}
	if m.Artifacts, err = parseArtifacts(top, m.SourceCommit); err != nil {
		return nil, err
	}
	return m, nil
}

func parseDigestMap(top map[string]json.RawMessage, name string) (map[string]string, error) {
	raw, ok := top[name]
	if !ok {
		return nil, manifestErr(name, "missing")
	}
	members, err := object(raw)
	if err != nil {
		return nil, manifestErr(name, "%v", err)
	}
	out := make(map[string]string, len(members))
	for _, k := range sortedKeys(members) {
		s, err := str(members[k])
		if err != nil {
			return nil, manifestErr(name+"."+k, "%v", err)
		}
		if !IsDigest(s) {
			return nil, manifestErr(name+"."+k, "must be sha256:<64 lowercase hex>")
		}
		out[k] = s
	}
	return out, nil
}

func parseMicrosandbox(top map[string]json.RawMessage) (Microsandbox, error) {
	var ms Microsandbox
	raw, ok := top["microsandbox"]
	if !ok {
		return ms, manifestErr("microsandbox", "missing")
	}
	members, err := object(raw)
	if err != nil {
		return ms, manifestErr("microsandbox", "%v", err)
	}
	for _, f := range []struct {
		key  string
		dst  *string
		hex  bool
		rule string
	}{
		{"version", &ms.Version, false, "a non-empty string"},
		{"runtime_sha256", &ms.RuntimeSHA256, true, "64 lowercase hex digits"},
		{"firmware_sha256", &ms.FirmwareSHA256, true, "64 lowercase hex digits"},
	} {
		r, ok := members[f.key]
		if !ok {
			return ms, manifestErr("microsandbox."+f.key, "missing")
		}
		s, err := str(r)
		if err != nil {
			return ms, manifestErr("microsandbox."+f.key, "%v", err)
		}
		if f.hex && !IsSHA256(s) || !f.hex && (s == "" || !printable(s)) {
			return ms, manifestErr("microsandbox."+f.key, "must be %s", f.rule)
		}
		*f.dst = s
	}
	return ms, nil
}

func parseArtifacts(top map[string]json.RawMessage, commit string) (map[string]Artifact, error) {
	raw, ok := top["artifacts"]
	if !ok {
		return nil, manifestErr("artifacts", "missing")
	}
	members, err := object(raw)
	if err != nil {
		return nil, manifestErr("artifacts", "%v", err)
	}
	out := make(map[string]Artifact, len(members))
	byName := make(map[string]string, len(members))
	for _, path := range sortedKeys(members) {
		f := "artifacts." + path
		if err := CheckRelativePath(path); err != nil {
			return nil, manifestErr(f, "logical path %v", err)
		}
		a, err := parseArtifact(f, members[path], commit, path == PathRuntimeImage)
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

func parseArtifact(f string, raw json.RawMessage, commit string, unpacked bool) (Artifact, error) {
	var a Artifact
	members, err := object(raw)
	if err != nil {
		return a, manifestErr(f, "%v", err)
	}
	get := func(k string) (json.RawMessage, error) {
		r, ok := members[k]
		if !ok {
			return nil, manifestErr(f+"."+k, "missing")
		}
		return r, nil
	}
	r, err := get("filename")
	if err != nil {
		return a, err
	}
	if a.Filename, err = str(r); err != nil {
		return a, manifestErr(f+".filename", "%v", err)
	}
	if err := CheckFileName(a.Filename); err != nil {
		return a, manifestErr(f+".filename", "%v", err)
	}
	if !strings.Contains(a.Filename, commit) {
		return a, manifestErr(f+".filename", "%q does not contain the source commit", a.Filename)
	}
	if r, err = get("sha256"); err != nil {
		return a, err
	}
	if a.SHA256, err = str(r); err != nil {
		return a, manifestErr(f+".sha256", "%v", err)
	}
	if !IsSHA256(a.SHA256) {
		return a, manifestErr(f+".sha256", "must be 64 lowercase hex digits")
	}
	if r, err = get("size"); err != nil {
		return a, err
	}
	if a.Size, err = integer(r, 1, math.MaxInt64); err != nil {
		return a, manifestErr(f+".size", "%v", err)
	}
	_, hasSHA := members["unpacked_sha256"]
	_, hasSize := members["unpacked_size"]
	if !unpacked && !hasSHA && !hasSize {
		return a, nil
	}
	if r, err = get("unpacked_sha256"); err != nil {
		return a, err
	}
	if a.UnpackedSHA256, err = str(r); err != nil {
		return a, manifestErr(f+".unpacked_sha256", "%v", err)
	}
	if !IsSHA256(a.UnpackedSHA256) {
		return a, manifestErr(f+".unpacked_sha256", "must be 64 lowercase hex digits")
	}
	if r, err = get("unpacked_size"); err != nil {
		return a, err
	}
	if a.UnpackedSize, err = integer(r, 1, math.MaxInt64); err != nil {
		return a, manifestErr(f+".unpacked_size", "%v", err)
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
