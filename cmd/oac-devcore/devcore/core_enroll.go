package devcore

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// EnrollRequest is the body of POST /api/v1/sandbox-node/enroll.
type EnrollRequest struct {
	NodeID               string `json:"node_id"`
	Credential           string `json:"credential"`
	Name                 string `json:"name"`
	Provider             string `json:"provider"`
	BackendFingerprint   string `json:"backend_fingerprint"`
	DeploymentGeneration int64  `json:"deployment_generation"`
	SpecificationDigest  string `json:"specification_digest"`
	CoreURL              string `json:"core_url"`
}

// EnrollmentIdentity is the node's identity as Core answers it (201 of
// enroll; identity adds Connected and ProviderReady).
type EnrollmentIdentity struct {
	NodeID               string `json:"node_id"`
	InstallationID       string `json:"installation_id"`
	Provider             string `json:"provider"`
	DeploymentGeneration int64  `json:"deployment_generation"`
	SpecificationDigest  string `json:"specification_digest"`
	MaxActive            int64  `json:"max_active"`
	MaxRetained          int64  `json:"max_retained"`
}

func (c *Core) enrollmentIdentity(n *nodeRecord) EnrollmentIdentity {
	return EnrollmentIdentity{n.NodeID, c.state.InstallationID, n.Provider, n.DeploymentGeneration, n.SpecificationDigest, n.MaxActive, n.MaxRetained}
}

// enroll registers a node with a token: the token is checked first (401),
// then the request (400), the address (409, the token stays unused), the
// node id (409) and the deployment (409). Only success consumes the token.
func (c *Core) enroll(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.tokenAuth(r)
	if t == nil {
		unauthorized(w)
		return
	}
	var req EnrollRequest
	if err := decodeBody(r, &req, false); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("the body is not an enrollment: %v", err))
		return
	}
	switch {
	case req.CoreURL == "":
		writeError(w, http.StatusBadRequest, "invalid_request_error", "core_url is missing")
		return
	case !ident.CanonicalUUID(req.NodeID):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "node_id must be a canonical UUID")
		return
	case len(req.Credential) < 32 || len(req.Credential) > 256 || strings.ContainsAny(req.Credential, " \t\r\n\v\f"):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "credential must be 32 to 256 characters without whitespace")
		return
	case req.Name == "" || len(req.Name) > 255:
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "name must be 1 to 255 characters")
		return
	case !ident.LowerHex(req.BackendFingerprint, 64):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "backend_fingerprint must be 64 lowercase hex digits")
		return
	case strings.TrimRight(req.CoreURL, "/") != c.url:
		writeError(w, http.StatusConflict, CodeAddressMismatch, "core_url is not this installation's public URL; the token was not used")
		return
	case c.node(req.NodeID) != nil:
		writeError(w, http.StatusConflict, CodeIdempotencyConflict, "a node with this node_id exists")
		return
	}
	g := c.target()
	if req.Provider != c.state.Provider || req.DeploymentGeneration != g.Generation || req.SpecificationDigest != g.Digest {
		writeError(w, http.StatusConflict, CodeSpecificationMismatch, "the node's provider, generation or specification is not the deployment's")
		return
	}
	n := &nodeRecord{
		NodeID: req.NodeID, CredentialSHA256: sha256Hex(req.Credential), Name: req.Name, Provider: req.Provider,
		BackendFingerprint: req.BackendFingerprint, DeploymentGeneration: g.Generation, SpecificationDigest: g.Digest,
		MaxActive: t.maxActive, MaxRetained: t.maxRetained, CoreURL: c.url, serving: g.Generation,
	}
	c.state.Nodes = append(c.state.Nodes, n)
	if err := c.save(); err != nil {
		c.state.Nodes = c.state.Nodes[:len(c.state.Nodes)-1]
		writeError(w, http.StatusServiceUnavailable, "runtime_node_unavailable", "storage failed")
		return
	}
	t.used = true
	if c.dropEnrolls > 0 {
		c.dropEnrolls--
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
	}
	writeJSON(w, http.StatusCreated, c.enrollmentIdentity(n))
}
