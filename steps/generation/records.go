package generation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// ErrRecord: a node record (preparation.json, runtime-artifacts.json) is
// not in its format.
var ErrRecord = errors.New("invalid node record")

// Preparation is preparation.json: the console later generations are
// prepared from.
type Preparation struct {
	SourceURL string `json:"source_url"`
}

// MaxPreparationSize bounds preparation.json.
const MaxPreparationSize = 4096

var preparationFormat = strictjson.Format{MaxSize: MaxPreparationSize}

// ParsePreparation reads preparation.json with its exact key set.
func ParsePreparation(data []byte) (*Preparation, error) {
	var p Preparation
	if err := preparationFormat.Decode(data, &p); err != nil {
		return nil, fmt.Errorf("%w: preparation.json must be {\"source_url\": <console origin>}: %v", ErrRecord, err)
	}
	if p.SourceURL == "" {
		return nil, fmt.Errorf("%w: preparation.json must be {\"source_url\": <console origin>}", ErrRecord)
	}
	if _, err := provider.CheckOrigin(p.SourceURL); err != nil {
		return nil, fmt.Errorf("%w: preparation.json: %v", ErrRecord, err)
	}
	return &p, nil
}

// RuntimeArtifacts is runtime-artifacts.json: the verified checksums of the
// Runtime files the installation downloaded into the node root, kept apart
// from the host program so that collecting the original generation removes
// only files whose bytes it can prove (CONTRACT §3).
type RuntimeArtifacts struct {
	InstallationID string            `json:"installation_id"`
	SourceCommit   string            `json:"source_commit"`
	SHA256         map[string]string `json:"sha256"`
}

// MaxRuntimeArtifactsSize bounds runtime-artifacts.json.
const MaxRuntimeArtifactsSize = 65536

var runtimeArtifactsFormat = strictjson.Format{MaxSize: MaxRuntimeArtifactsSize}

// ParseRuntimeArtifacts reads runtime-artifacts.json: exact keys, a
// 40-hex source commit, and sha256 entries only for Runtime paths.
func ParseRuntimeArtifacts(data []byte) (*RuntimeArtifacts, error) {
	var r RuntimeArtifacts
	if err := runtimeArtifactsFormat.Decode(data, &r); err != nil {
		return nil, fmt.Errorf("%w: runtime-artifacts.json: %v", ErrRecord, err)
	}
	if !ident.CanonicalUUID(r.InstallationID) || !release.IsCommit(r.SourceCommit) || len(r.SHA256) == 0 {
		return nil, fmt.Errorf("%w: runtime-artifacts.json needs installation_id, source_commit and sha256", ErrRecord)
	}
	for p, sum := range r.SHA256 {
		if !isRuntimePath(p) || !release.IsSHA256(sum) {
			return nil, fmt.Errorf("%w: runtime-artifacts.json: entry %q is not a Runtime path with a sha256", ErrRecord, p)
		}
	}
	return &r, nil
}

// Marshal writes the record with sorted keys, two-space indentation and a
// trailing newline.
func (r *RuntimeArtifacts) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	if _, err := ParseRuntimeArtifacts(b.Bytes()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// PathUnpacked is the unpacked Runtime archive next to the download.
const PathUnpacked = "images/runtime.tar"

// runtimePaths are the Runtime files of a release directory for provider,
// in catalog order, with the unpacked archive after the archive. The node
// program (role node) is the host program, not a Runtime file.
func runtimePaths(providerName string) []string {
	var out []string
	for _, a := range release.Catalog(providerName) {
		if a.Role == release.RoleNode {
			continue
		}
		out = append(out, a.Path)
		if a.Path == release.PathRuntimeImage {
			out = append(out, PathUnpacked)
		}
	}
	return out
}

func isRuntimePath(p string) bool {
	for _, q := range runtimePaths(release.ProviderMicrosandbox) {
		if p == q {
			return true
		}
	}
	return false
}

// runtimeFile is one Runtime file of a release directory and what its
// bytes must be.
type runtimeFile struct {
	Rel      string // catalog path below the release directory
	SHA256   string
	Size     int64  // 0: not declared (the seccomp profile)
	Filename string // released file name; "" for the seccomp profile and the unpacked archive
}

// mode is the file's mode on the node: native executables 0700, else 0600.
func (f runtimeFile) mode() uint32 {
	if len(f.Rel) > 7 && f.Rel[:7] == "native/" {
		return 0o700
	}
	return 0o600
}

// releaseFiles are the Runtime files of a verified release, as its
// metadata declares them.
func releaseFiles(r *release.Release) []runtimeFile {
	var out []runtimeFile
	for _, p := range runtimePaths(r.Provider) {
		switch p {
		case release.PathSeccomp:
			out = append(out, runtimeFile{Rel: p, SHA256: r.SeccompSHA256})
		case PathUnpacked:
			a := r.Manifest.Artifacts[release.PathRuntimeImage]
			out = append(out, runtimeFile{Rel: p, SHA256: a.UnpackedSHA256, Size: a.UnpackedSize})
		default:
			a := r.Manifest.Artifacts[p]
			out = append(out, runtimeFile{Rel: p, SHA256: a.SHA256, Size: a.Size, Filename: a.Filename})
		}
	}
	return out
}

// provenFiles are the Runtime files runtime-artifacts.json proves, for
// provider; paths without an entry have no SHA256.
func provenFiles(providerName string, ra *RuntimeArtifacts) []runtimeFile {
	var out []runtimeFile
	for _, p := range runtimePaths(providerName) {
		out = append(out, runtimeFile{Rel: p, SHA256: ra.SHA256[p]})
	}
	return out
}
