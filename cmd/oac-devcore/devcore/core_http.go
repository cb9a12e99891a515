package devcore

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// Error codes of Core's machine routes (CONTRACT §2.2).
const (
	CodeInvalidRequest        = "invalid_request"
	CodeInvalidCredential     = "invalid_node_credential"
	CodeSpecificationMismatch = "sandbox_specification_mismatch"
	CodeAddressMismatch       = "sandbox_node_address_mismatch"
	CodeIdempotencyConflict   = "idempotency_conflict"
	CodeNotFound              = "not_found"
	CodeConnectionConflict    = "connection_conflict"
	CodeNodeHoldsSandboxes    = "sandbox_node_in_use"
	CodeInvalidAdminKey       = "invalid_api_key"
)

// maxBody bounds a request body.
const maxBody = 16384

// Routes registers the Core routes on mux: the node's machine routes under
// /api/v1/sandbox-node/ and the admin routes under /core/v1/.
func (c *Core) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/sandbox-node/configuration", c.configuration)
	mux.HandleFunc("POST /api/v1/sandbox-node/enroll", c.enroll)
	mux.HandleFunc("GET /api/v1/sandbox-node/identity", c.identity)
	mux.HandleFunc("GET /api/v1/sandbox-node/connect", c.connect)
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such route")
	})
	mux.HandleFunc("POST /core/v1/sandbox/enrollment-tokens", c.admin(c.createToken))
	mux.HandleFunc("GET /core/v1/sandbox/nodes", c.admin(c.listNodes))
	mux.HandleFunc("GET /core/v1/sandbox/nodes/{id}", c.admin(c.getNode))
	mux.HandleFunc("DELETE /core/v1/sandbox/nodes/{id}", c.admin(c.removeNode))
	mux.HandleFunc("GET /core/v1/sandbox/deployment", c.admin(c.getDeployment))
	mux.HandleFunc("POST /core/v1/sandbox/deployment/generations", c.admin(c.publishGeneration))
	mux.HandleFunc("POST /core/v1/sandbox/deployment/generations/{generation}/drop", c.admin(c.dropGeneration))
	mux.HandleFunc("/core/v1/", c.admin(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such route")
	}))
}

// writeError answers {"error":{"code":…,"message":…}}.
func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encode answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// bearer is the secret of the Authorization header, or "".
func bearer(r *http.Request) string {
	s, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(s)
}

// admin guards an admin route with the admin key.
func (c *Core) admin(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if key := bearer(r); key == "" || !equalSecret(sha256Hex(c.adminKey), key) {
			writeError(w, http.StatusUnauthorized, CodeInvalidAdminKey, "the admin key is missing or wrong")
			return
		}
		h(w, r)
	}
}

// decodeBody decodes a JSON object body strictly into v. An empty body
// leaves v as it is when allowEmpty.
func decodeBody(r *http.Request, v any, allowEmpty bool) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return err
	}
	if len(data) > maxBody {
		return errors.New("the body is too large")
	}
	if allowEmpty && len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("data after the JSON object")
	}
	return nil
}

// nodeAuth finds the node whose credential the request carries. Called
// with c.mu held.
func (c *Core) nodeAuth(r *http.Request, nodeID string) *nodeRecord {
	secret := bearer(r)
	n := c.node(nodeID)
	if secret == "" || n == nil || !equalSecret(n.CredentialSHA256, secret) {
		return nil
	}
	return n
}

// tokenAuth finds the valid, unused enrollment token the request carries.
// Called with c.mu held.
func (c *Core) tokenAuth(r *http.Request) *enrollToken {
	secret := bearer(r)
	if secret == "" {
		return nil
	}
	t := c.tokens[sha256Hex(secret)]
	if t == nil || t.used || !c.now().Before(t.expires) {
		return nil
	}
	return t
}

func unauthorized(w http.ResponseWriter) {
	writeError(w, http.StatusUnauthorized, CodeInvalidCredential, "the credential is missing, invalid, expired or already used")
}
