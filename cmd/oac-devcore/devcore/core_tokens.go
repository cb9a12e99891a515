package devcore

import (
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Default capacity of a token that names none.
const (
	DefaultMaxActive   = 4
	DefaultMaxRetained = 8
)

// TokenRequest is the body of POST /core/v1/sandbox/enrollment-tokens.
type TokenRequest struct {
	MaxActive   *int64 `json:"max_active,omitempty"`
	MaxRetained *int64 `json:"max_retained,omitempty"`
}

// TokenResponse is its answer.
type TokenResponse struct {
	Token        string `json:"token"`
	ExpiresAt    string `json:"expires_at"`
	EnrollmentID string `json:"enrollment_id"`
}

func (c *Core) createToken(w http.ResponseWriter, r *http.Request) {
	var req TokenRequest
	if err := decodeBody(r, &req, true); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, fmt.Sprintf("the body is not a token request: %v", err))
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &enrollToken{id: uuid.NewString(), expires: c.now().Add(TokenLifetime), maxActive: DefaultMaxActive, maxRetained: DefaultMaxRetained}
	if req.MaxActive != nil {
		t.maxActive = *req.MaxActive
	}
	if req.MaxRetained != nil {
		t.maxRetained = *req.MaxRetained
	}
	if c.state.Provider == release.ProviderDocker {
		t.maxRetained = t.maxActive // Docker keeps no stopped sandboxes beyond the active ones
	}
	if t.maxActive < 1 || t.maxRetained < t.maxActive || t.maxRetained > 1000000 {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "need 1 <= max_active <= max_retained <= 1000000")
		return
	}
	secret := "oac_et_" + newSecret()
	c.tokens[sha256Hex(secret)] = t
	writeJSON(w, http.StatusCreated, TokenResponse{Token: secret, ExpiresAt: t.expires.UTC().Format(time.RFC3339), EnrollmentID: t.id})
}
