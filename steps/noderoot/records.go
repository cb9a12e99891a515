package noderoot

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
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
	InstallationID ident.InstallationID `json:"installation_id"`
	SourceCommit   string               `json:"source_commit"`
	SHA256         map[string]string    `json:"sha256"`
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
	if !r.InstallationID.Valid() || !release.IsCommit(r.SourceCommit) || len(r.SHA256) == 0 {
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

// ReadRuntimeArtifacts reads runtime-artifacts.json; nil when absent.
func ReadRuntimeArtifacts(d Data) (*RuntimeArtifacts, error) {
	data, err := d.Root().ReadFile(layout.RuntimeArtifactsFile, safefile.Expect{UID: d.UID(), Mode: 0o600, MaxSize: MaxRuntimeArtifactsSize})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ra, err := ParseRuntimeArtifacts(data)
	if err != nil {
		return nil, err
	}
	if ra.InstallationID != d.Identity().InstallationID {
		return nil, fmt.Errorf("%w: runtime-artifacts.json names installation %s", ErrRecord, ra.InstallationID)
	}
	return ra, nil
}
