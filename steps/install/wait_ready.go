package install

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/workflow"
)

// ReadyDeadline is how long the installation waits for Core to report the
// node connected and its provider ready (CONTRACT §2.3).
var ReadyDeadline = 60 * time.Second

// The sleeps between two polls of Core's identity route start at
// readyFirstInterval and double up to readyMaxInterval (CONTRACT §2.3):
// a node usually connects within a second of its start, so a fixed 2 s
// sleep after a first poll that came too early cost most of an install.
const (
	readyFirstInterval = 100 * time.Millisecond
	readyMaxInterval   = 2 * time.Second
)

// readyIntervals yields the sleep before each next poll: 100 ms, 200 ms,
// 400 ms, … then 2 s for good.
type readyIntervals struct{ next time.Duration }

func (r *readyIntervals) Next() time.Duration {
	if r.next == 0 {
		r.next = readyFirstInterval
	}
	d := r.next
	r.next = min(2*r.next, readyMaxInterval)
	return d
}

// sleepCtx sleeps d or until ctx ends (tests replace it to record the
// schedule).
var sleepCtx = download.Sleep

// ErrNodeNotReady: Core did not report the node connected and ready in time.
var ErrNodeNotReady = errors.New("the node did not become ready")

// waitReadyStep polls Core's identity route with the node's credential
// until it reports the node connected and its provider ready. Transient
// answers (408, 429, 5xx) and network errors keep polling; any other
// status fails at once. The service and state are kept on failure.
type waitReadyStep struct{ e *NodeEnv }

// IdentityAnswer is Core's identity answer (the echoed identity plus the
// two readiness flags); other keys are skipped. An absent key reads as its
// zero value: a missing echo is a different identity, a missing flag is
// not ready yet.
type IdentityAnswer struct {
	NodeID               string               `json:"node_id,omitempty"`
	InstallationID       ident.InstallationID `json:"installation_id,omitempty"`
	Provider             string               `json:"provider,omitempty"`
	DeploymentGeneration int64                `json:"deployment_generation,omitempty"`
	SpecificationDigest  string               `json:"specification_digest,omitempty"`
	Connected            bool                 `json:"connected,omitempty"`
	ProviderReady        bool                 `json:"provider_ready,omitempty"`
}

var identityAnswerFormat = strictjson.Format{MaxSize: core.MaxConfigurationSize, AllowUnknownKeys: true}

func (s waitReadyStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	nid, err := e.NodeIdentity()
	if err != nil {
		return workflow.Result{}, err
	}
	if nid.CoreURL != noderoot.TrimOrigin(e.in.CoreOrigin) {
		return workflow.Result{}, fmt.Errorf("%w: identity.json names Core %s, this command %s", noderoot.ErrIdentity, nid.CoreURL, e.in.CoreOrigin)
	}
	if nid.AllowInsecureOrigin != e.in.AllowInsecureOrigin {
		return workflow.Result{}, fmt.Errorf("%w: identity.json's insecure-origin policy differs from this command's", noderoot.ErrIdentity)
	}
	pool, err := e.CertPool()
	if err != nil {
		return workflow.Result{}, err
	}
	c, err := noderoot.NewCoreClient(nid, pool, e.Proxy())
	if err != nil {
		return workflow.Result{}, err
	}
	ready, last, err := pollUntil(ctx, time.Now().Add(ReadyDeadline), func(rctx context.Context) (bool, string, error) {
		a, status, err := CoreIdentity(rctx, c)
		switch {
		case ctx.Err() != nil:
			return false, "", ctx.Err()
		case err != nil:
			return false, "Core has not confirmed the connection (" + err.Error() + ")", nil
		case status == http.StatusOK:
			if a.NodeID != nid.Identity.NodeID || a.InstallationID != nid.Identity.InstallationID || a.Provider != nid.Identity.Provider ||
				a.DeploymentGeneration != nid.Identity.DeploymentGeneration || a.SpecificationDigest != nid.Identity.SpecificationDigest {
				return false, "", fmt.Errorf("Core answered for a different node identity")
			}
			if a.Connected && a.ProviderReady {
				return true, "", nil
			}
			if a.Connected {
				return false, "the node is connected but its provider is not ready", nil
			}
			return false, "Core has not confirmed the connection", nil
		case download.RetryableStatus(status):
			return false, fmt.Sprintf("Core has not confirmed the connection (HTTP %d)", status), nil
		default:
			return false, "", fmt.Errorf("Core refused the node's identity read (HTTP %d)", status)
		}
	})
	if err != nil {
		return workflow.Result{}, err
	}
	if ready {
		return workflow.Result{Facts: map[string]string{"node_id": nid.Identity.NodeID}}, nil
	}
	return workflow.Result{}, fmt.Errorf("%w: %s; the service and its state are kept: see `sudo journalctl -u oac-node-%s.service`", ErrNodeNotReady, last, e.in.InstallationID)
}

// pollUntil calls poll at once and then after each of readyIntervals'
// sleeps (never past deadline), each call with a timeout of min(10 s, the
// time left), until poll reports done or fails. Once the deadline passed
// it returns the last complete poll's reason for not being done (a poll
// the deadline cut short observed nothing).
func pollUntil(ctx context.Context, deadline time.Time, poll func(context.Context) (done bool, reason string, err error)) (bool, string, error) {
	last := "Core has not confirmed the connection"
	var intervals readyIntervals
	for {
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return false, last, nil
		}
		rctx, cancel := context.WithTimeout(ctx, min(10*time.Second, remaining))
		done, reason, err := poll(rctx)
		cancel()
		if err != nil {
			return false, "", err
		}
		if done {
			return true, "", nil
		}
		if rctx.Err() != nil && !time.Now().Before(deadline) {
			// The deadline cut this poll short: it observed nothing, and
			// the message keeps what the last complete poll saw (the
			// provider's state, not a timeout).
			return false, last, nil
		}
		last = reason
		if err := sleepCtx(ctx, min(intervals.Next(), time.Until(deadline))); err != nil {
			return false, "", err
		}
	}
}

// CoreIdentity reads Core's identity route once with the node credential
// (uninstall's Core check reads its status too).
func CoreIdentity(ctx context.Context, c *core.Client) (*IdentityAnswer, int, error) {
	body, status, err := c.IdentityAnswer(ctx)
	if err != nil || status != http.StatusOK {
		return nil, status, err
	}
	var a IdentityAnswer
	if err := identityAnswerFormat.Decode(body, &a); err != nil {
		return nil, 0, fmt.Errorf("Core's identity answer is not valid: %v", err)
	}
	return &a, http.StatusOK, nil
}

// Check reads Core's identity route once: connected and ready is done;
// anything else leaves the wait to the run.
func (s waitReadyStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	nid, err := e.NodeIdentity()
	if err != nil || nid.CoreURL != noderoot.TrimOrigin(e.in.CoreOrigin) || nid.AllowInsecureOrigin != e.in.AllowInsecureOrigin {
		return notDone, workflow.Result{}, nil
	}
	pool, err := e.CertPool()
	if err != nil {
		return notDone, workflow.Result{}, nil
	}
	c, err := noderoot.NewCoreClient(nid, pool, e.Proxy())
	if err != nil {
		return notDone, workflow.Result{}, nil
	}
	a, status, err := CoreIdentity(ctx, c)
	if err != nil || status != http.StatusOK || !a.Connected || !a.ProviderReady || a.NodeID != nid.Identity.NodeID ||
		a.InstallationID != nid.Identity.InstallationID || a.SpecificationDigest != nid.Identity.SpecificationDigest ||
		a.DeploymentGeneration != nid.Identity.DeploymentGeneration || a.Provider != nid.Identity.Provider {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{Facts: map[string]string{"node_id": nid.Identity.NodeID}}, nil
}
