package generation

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/workflow"
)

// ReadyDeadline is how long the installation waits for Core to report the
// node connected and its provider ready (CONTRACT §2.3).
var ReadyDeadline = 60 * time.Second

// ErrNodeNotReady: Core did not report the node connected and ready in time.
var ErrNodeNotReady = errors.New("the node did not become ready")

// waitReadyStep polls Core's identity route with the node's credential
// until it reports the node connected and its provider ready. Transient
// answers (408, 429, 5xx) and network errors keep polling; any other
// status fails at once. The service and state are kept on failure.
type waitReadyStep struct{ e *InstallEnv }

// identityAnswer is Core's identity answer (the echoed identity plus the
// two readiness flags); other keys are skipped. An absent key reads as its
// zero value: a missing echo is a different identity, a missing flag is
// not ready yet.
type identityAnswer struct {
	NodeID               string `json:"node_id,omitempty"`
	InstallationID       string `json:"installation_id,omitempty"`
	Provider             string `json:"provider,omitempty"`
	DeploymentGeneration int64  `json:"deployment_generation,omitempty"`
	SpecificationDigest  string `json:"specification_digest,omitempty"`
	Connected            bool   `json:"connected,omitempty"`
	ProviderReady        bool   `json:"provider_ready,omitempty"`
}

var identityAnswerFormat = strictjson.Format{MaxSize: MaxConfigurationSize, AllowUnknownKeys: true}

func (s waitReadyStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	nid, err := e.nodeIdentity()
	if err != nil {
		return workflow.Result{}, err
	}
	if nid.CoreURL != trimOrigin(e.in.CoreOrigin) {
		return workflow.Result{}, fmt.Errorf("%w: identity.json names Core %s, this command %s", ErrIdentity, nid.CoreURL, e.in.CoreOrigin)
	}
	if nid.AllowInsecureOrigin != e.in.AllowInsecureOrigin {
		return workflow.Result{}, fmt.Errorf("%w: identity.json's insecure-origin policy differs from this command's", ErrIdentity)
	}
	pool, err := e.certPool()
	if err != nil {
		return workflow.Result{}, err
	}
	c, err := NewCoreClient(nid, pool, e.proxy())
	if err != nil {
		return workflow.Result{}, err
	}
	u := nid.CoreURL + "/api/v1/sandbox-node/identity?node_id=" + url.QueryEscape(nid.Identity.NodeID)
	deadline := time.Now().Add(ReadyDeadline)
	var last string
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			break
		}
		rctx, cancel := context.WithTimeout(ctx, min(10*time.Second, remaining))
		a, status, err := c.identity(rctx, u)
		cancel()
		switch {
		case ctx.Err() != nil:
			return workflow.Result{}, ctx.Err()
		case err != nil:
			last = "Core has not confirmed the connection (" + err.Error() + ")"
		case status == http.StatusOK:
			if a.NodeID != nid.Identity.NodeID || a.InstallationID != nid.Identity.InstallationID || a.Provider != nid.Identity.Provider ||
				a.DeploymentGeneration != nid.Identity.DeploymentGeneration || a.SpecificationDigest != nid.Identity.SpecificationDigest {
				return workflow.Result{}, fmt.Errorf("Core answered for a different node identity")
			}
			if a.Connected && a.ProviderReady {
				return workflow.Result{Facts: map[string]string{"node_id": nid.Identity.NodeID}}, nil
			}
			last = "Core has not confirmed the connection"
			if a.Connected {
				last = "the node is connected but its provider is not ready"
			}
		case transient(status):
			last = fmt.Sprintf("Core has not confirmed the connection (HTTP %d)", status)
		default:
			return workflow.Result{}, fmt.Errorf("Core refused the node's identity read (HTTP %d)", status)
		}
		select {
		case <-ctx.Done():
			return workflow.Result{}, ctx.Err()
		case <-time.After(min(2*time.Second, time.Until(deadline))):
		}
	}
	return workflow.Result{}, fmt.Errorf("%w: %s; the service and its state are kept: see `sudo journalctl -u oac-node-%s.service`", ErrNodeNotReady, last, e.in.InstallationID)
}

func transient(status int) bool {
	switch status {
	case 408, 429, 500, 502, 503, 504:
		return true
	}
	return false
}

// identity reads Core's identity route once with the node credential.
func (c *CoreClient) identity(ctx context.Context, u string) (*identityAnswer, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Authorization", "Bearer "+c.credential)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, 0, errors.New(transportReason(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxConfigurationSize+1))
	if err != nil {
		return nil, 0, errors.New(transportReason(err))
	}
	var a identityAnswer
	if err := identityAnswerFormat.Decode(body, &a); err != nil {
		return nil, 0, fmt.Errorf("Core's identity answer is not valid: %v", err)
	}
	return &a, http.StatusOK, nil
}
