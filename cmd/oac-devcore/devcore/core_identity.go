package devcore

import (
	"net/http"
)

// NodeIdentity is the answer of GET /api/v1/sandbox-node/identity.
type NodeIdentity struct {
	EnrollmentIdentity
	Connected     bool `json:"connected"`
	ProviderReady bool `json:"provider_ready"`
}

func (c *Core) identity(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("node_id")
	if id == "" {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "node_id is missing")
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodeAuth(r, id)
	if n == nil {
		unauthorized(w)
		return
	}
	writeJSON(w, http.StatusOK, NodeIdentity{c.enrollmentIdentity(n), n.connected, n.connected && n.health.ProviderReady})
}
