package devcore

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// Configuration is Core's configuration answer (CONTRACT §2.2).
type Configuration struct {
	InstallationID      string          `json:"installation_id"`
	Provider            string          `json:"provider"`
	CoreURL             string          `json:"core_url"`
	Generation          int64           `json:"generation"`
	Specification       json.RawMessage `json:"specification"`
	SpecificationDigest string          `json:"specification_digest"`
	MaxActive           int64           `json:"max_active"`
	MaxRetained         int64           `json:"max_retained"`
}

// configuration answers a new node (enrollment token, no node id) or a
// registered one (credential and X-OAC-Node-ID). A token never reads
// another generation than the target and is not consumed.
func (c *Core) configuration(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var maxActive, maxRetained int64
	nodeID := r.Header.Get("X-OAC-Node-ID")
	var n *nodeRecord
	if nodeID != "" {
		if n = c.nodeAuth(r, nodeID); n == nil {
			unauthorized(w)
			return
		}
		maxActive, maxRetained = n.MaxActive, n.MaxRetained
	} else {
		t := c.tokenAuth(r)
		if t == nil {
			unauthorized(w)
			return
		}
		maxActive, maxRetained = t.maxActive, t.maxRetained
	}
	g := c.target()
	if q := r.URL.Query().Get("generation"); q != "" {
		want, err := strconv.ParseInt(q, 10, 64)
		if err != nil || want < 1 || strconv.FormatInt(want, 10) != q {
			writeError(w, http.StatusBadRequest, CodeInvalidRequest, "generation must be a positive integer")
			return
		}
		if g = c.generation(want); g == nil || g.Dropped || (n == nil && want != c.state.Target) {
			writeError(w, http.StatusConflict, CodeSpecificationMismatch, fmt.Sprintf("generation %d is not one this node may still need", want))
			return
		}
	}
	writeJSON(w, http.StatusOK, Configuration{
		InstallationID:      c.state.InstallationID,
		Provider:            c.state.Provider,
		CoreURL:             c.url,
		Generation:          g.Generation,
		Specification:       g.Specification,
		SpecificationDigest: g.Digest,
		MaxActive:           maxActive,
		MaxRetained:         maxRetained,
	})
}
