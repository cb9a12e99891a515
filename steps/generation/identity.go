package generation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/openagentcore/oac-node-install/steps/ident"
	"github.com/openagentcore/oac-node-install/steps/provider"
	"github.com/openagentcore/oac-node-install/steps/release"
)

// MaxIdentitySize bounds state/node/identity.json.
const MaxIdentitySize = 16384

// ErrIdentity: state/node/identity.json is missing, unsafe or not the
// node's identity (CONTRACT §3.3).
var ErrIdentity = errors.New("invalid node identity")

// NodeIdentity is state/node/identity.json, written by oac-node register.
// The credential is a secret: it is never printed.
type NodeIdentity struct {
	Identity struct {
		SpecificationDigest  string `json:"specification_digest"`
		DeploymentGeneration int64  `json:"deployment_generation"`
		NodeID               string `json:"node_id"`
		InstallationID       string `json:"installation_id"`
		Provider             string `json:"provider"`
		BackendFingerprint   string `json:"backend_fingerprint"`
		MaxActive            int64  `json:"max_active"`
		MaxRetained          int64  `json:"max_retained"`
	} `json:"identity"`
	Credential          string `json:"credential"`
	CoreURL             string `json:"core_url"`
	OwnerEpoch          uint64 `json:"owner_epoch"`
	AllowInsecureOrigin bool   `json:"allow_insecure_origin,omitempty"`
	CoreCA              string `json:"core_ca,omitempty"`
	CoreCASHA256        string `json:"core_ca_sha256,omitempty"`
}

// ParseNodeIdentity reads identity.json strictly: unknown fields, trailing
// data, numbers where strings belong and the reverse are refused, and the
// node id, credential, Core origin and installation are checked.
func ParseNodeIdentity(data []byte) (*NodeIdentity, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrIdentity, fmt.Sprintf(format, args...))
	}
	if len(data) > MaxIdentitySize {
		return nil, bad("larger than %d bytes", MaxIdentitySize)
	}
	var present struct {
		Identity   *json.RawMessage `json:"identity"`
		Credential *json.RawMessage `json:"credential"`
		CoreURL    *json.RawMessage `json:"core_url"`
		OwnerEpoch *json.RawMessage `json:"owner_epoch"`
	}
	if err := json.Unmarshal(data, &present); err != nil || present.Identity == nil || present.Credential == nil || present.CoreURL == nil || present.OwnerEpoch == nil {
		return nil, bad("identity, credential, core_url and owner_epoch are required")
	}
	var id NodeIdentity
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&id); err != nil {
		return nil, bad("%v", redactJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, bad("data after the JSON object")
	}
	switch {
	case !ident.CanonicalUUID(id.Identity.NodeID):
		return nil, bad("node_id is not a canonical UUID")
	case !ident.CanonicalUUID(id.Identity.InstallationID):
		return nil, bad("installation_id is not a canonical UUID")
	case !release.IsSHA256(id.Credential):
		return nil, bad("the credential is not 64 lowercase hex digits")
	case id.CoreCA != "" && !release.IsSHA256(id.CoreCASHA256):
		return nil, bad("core_ca without a core_ca_sha256")
	}
	if _, err := provider.CheckOrigin(id.CoreURL); err != nil {
		return nil, bad("core_url: %v", err)
	}
	return &id, nil
}

// redactJSONError keeps a decoding error's shape without quoting values
// (the document holds the credential).
func redactJSONError(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s has the wrong type", te.Field)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	}
	if msg := err.Error(); len(msg) < 80 && bytes.HasPrefix([]byte(msg), []byte("json: unknown field")) {
		return msg
	}
	return "not a node identity"
}
