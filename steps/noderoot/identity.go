package noderoot

import (
	"errors"
	"fmt"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// identityReadTries is how many times ReadNodeIdentity reads a file that
// was replaced while it read it.
const identityReadTries = 5

// MaxIdentitySize bounds state/node/identity.json.
const MaxIdentitySize = 16384

// ErrIdentity: state/node/identity.json is missing, unsafe or not the
// node's identity (CONTRACT §3.3).
var ErrIdentity = errors.New("invalid node identity")

// NodeIdentity is state/node/identity.json, written by oac-node register.
// The credential is a secret: it is never printed.
type NodeIdentity struct {
	Identity struct {
		SpecificationDigest  string               `json:"specification_digest"`
		DeploymentGeneration int64                `json:"deployment_generation"`
		NodeID               string               `json:"node_id"`
		InstallationID       ident.InstallationID `json:"installation_id"`
		Provider             string               `json:"provider"`
		BackendFingerprint   string               `json:"backend_fingerprint"`
		MaxActive            int64                `json:"max_active"`
		MaxRetained          int64                `json:"max_retained"`
	} `json:"identity"`
	Credential          string `json:"credential"`
	CoreURL             string `json:"core_url"`
	OwnerEpoch          uint64 `json:"owner_epoch"`
	AllowInsecureOrigin bool   `json:"allow_insecure_origin,omitempty"`
	CoreCA              string `json:"core_ca,omitempty"`
	CoreCASHA256        string `json:"core_ca_sha256,omitempty"`
}

var identityFormat = strictjson.Format{MaxSize: MaxIdentitySize}

// ParseNodeIdentity reads identity.json strictly (every key of CONTRACT
// §3.3 present with its type, no other key, no duplicate or case variant)
// and checks the node id, credential, Core origin and installation. Errors
// name keys, never values: the document holds the credential.
func ParseNodeIdentity(data []byte) (*NodeIdentity, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrIdentity, fmt.Sprintf(format, args...))
	}
	var id NodeIdentity
	if err := identityFormat.Decode(data, &id); err != nil {
		return nil, bad("%v", err)
	}
	switch {
	case !ident.CanonicalUUID(id.Identity.NodeID):
		return nil, bad("node_id is not a canonical UUID")
	case !id.Identity.InstallationID.Valid():
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

// NodeIdentity reads state/node/identity.json once (ReadNodeIdentity).
func (e *Env) NodeIdentity() (*NodeIdentity, error) {
	if e.identity != nil {
		return e.identity, nil
	}
	id, err := ReadNodeIdentity(e.root, e.opts.UID, e.opts.Identity.InstallationID)
	if err != nil {
		return nil, err
	}
	e.identity = id
	return id, nil
}

// ReadNodeIdentity reads state/node/identity.json of the node root with
// the node's file rules (no link, the account uid's, mode 0600, bounded),
// strictly (ParseNodeIdentity), and requires it to be installation id's,
// with a Core origin its recorded insecure-origin policy allows.
func ReadNodeIdentity(root *safefile.Root, uid int, id ident.InstallationID) (*NodeIdentity, error) {
	var data []byte
	var err error
	// The running node replaces the file (a write and a rename) when it
	// refreshes its identity: a read that met a replacement reads the new
	// file, a few times before it gives up.
	for try := 0; ; try++ {
		data, err = root.ReadFile(layout.NodeIdentityFile, safefile.Expect{UID: uid, Mode: 0o600, MaxSize: MaxIdentitySize})
		if err == nil || !errors.Is(err, safefile.ErrReplaced) || try == identityReadTries-1 {
			break
		}
		time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrIdentity, err)
	}
	nid, err := ParseNodeIdentity(data)
	if err != nil {
		return nil, err
	}
	if nid.Identity.InstallationID != id {
		return nil, fmt.Errorf("%w: it names installation %s", ErrIdentity, nid.Identity.InstallationID)
	}
	// Plain http to a host that is not loopback only where the node was
	// installed with --allow-insecure-origin (CONTRACT §4.4).
	if err := provider.CheckOriginPolicy(nid.CoreURL, nid.AllowInsecureOrigin); err != nil {
		return nil, fmt.Errorf("%w: core_url: %w", ErrIdentity, err)
	}
	return nid, nil
}
