package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

// The service account's view of one node's registration and of Core's
// view of it, read in the child (Serve): the node root's identity files,
// and one request to Core with the node's credential at root's address of
// Core.

// coreTimeout bounds status's one request to Core: status shows an
// unreachable Core, it never waits for one.
const coreTimeout = 5 * time.Second

// NodeRequest is what status asks the service account about one
// node. The Core address, its insecure-origin policy and the CA's sha256
// are root's record of the installation, never the node's files; an empty
// CoreURL asks for the registration only.
type NodeRequest struct {
	InstallationID      ident.InstallationID `json:"installation_id"`
	CoreURL             string               `json:"core_url,omitempty"`
	AllowInsecureOrigin bool                 `json:"allow_insecure_origin,omitempty"`
	CoreCASHA256        string               `json:"core_ca_sha256,omitempty"`
}

// Registration states.
const (
	// RegistrationNone: neither state/node/identity.json nor
	// registered.json exists; the node never started to register.
	RegistrationNone = "not-registered"
	// RegistrationPending: the node wrote its identity (before enrolling)
	// but the installation never recorded the registration.
	RegistrationPending = "pending"
	// RegistrationDone: registered.json and a valid identity exist.
	RegistrationDone = "registered"
	// RegistrationInvalid: the identity is missing next to
	// registered.json, unsafe or not this node's.
	RegistrationInvalid = "invalid"
)

// Registration is the node's registration as its node root shows it. The
// credential is never part of it.
type Registration struct {
	// Source is always "account": the service account's claim, never
	// root's record (see RootRecord).
	Source string `json:"source"`
	State  string `json:"state"`
	// NodeID is the node's id from state/node/identity.json.
	NodeID string `json:"node_id,omitempty"`
	// CoreURL is the Core the identity names.
	CoreURL string `json:"core_url,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Core view states.
const (
	CoreReady            = "ready"              // connected and provider ready
	CoreProviderNotReady = "provider-not-ready" // connected, provider not ready
	CoreNotConnected     = "not-connected"      // Core lists the node, which is not connected
	CoreRemoved          = "removed"            // HTTP 401: Core no longer accepts the credential
	CoreUnreachable      = "unreachable"        // no answer within coreTimeout
	CoreAnswered         = "error"              // another HTTP status, or an answer for another node
	CoreNotAsked         = "not-asked"          // no identity to ask with, or no record of Core
)

// CoreView is Core's view of the node, from its identity route (CONTRACT
// §2.3, §2.4) asked with the node credential.
type CoreView struct {
	URL           string `json:"url,omitempty"`
	State         string `json:"state"`
	HTTPStatus    int    `json:"http_status,omitempty"`
	Connected     bool   `json:"connected"`
	ProviderReady bool   `json:"provider_ready"`
	// Diagnostic is the node's diagnostic code (CONTRACT §6.1) when Core
	// sends one.
	Diagnostic string `json:"diagnostic,omitempty"`
	Error      string `json:"error,omitempty"`
}

// nodeStatus reads the registration of the node of req.InstallationID
// under home (as the service account uid) and, when it has an identity and
// req names Core, asks Core once, within coreTimeout, what it knows
// of the node. It writes nothing. Core is nil when not asked.
func nodeStatus(ctx context.Context, home string, uid int, p proxy.Env, req NodeRequest) (Registration, *CoreView) {
	root, err := noderoot.OpenNodeRoot(home, req.InstallationID)
	if err != nil {
		return Registration{State: RegistrationInvalid, Error: err.Error()}, nil
	}
	defer root.Close()
	registered, err := present(root, "registered.json")
	if err != nil {
		return Registration{State: RegistrationInvalid, Error: err.Error()}, nil
	}
	hasIdentity, err := present(root, "state/node/identity.json")
	if err != nil {
		return Registration{State: RegistrationInvalid, Error: err.Error()}, nil
	}
	if !hasIdentity {
		if registered {
			return Registration{State: RegistrationInvalid, Error: "registered.json exists but state/node/identity.json does not"}, nil
		}
		return Registration{State: RegistrationNone}, nil
	}
	data, err := root.ReadFile("state/node/identity.json", safefile.Expect{UID: uid, Mode: 0o600, MaxSize: noderoot.MaxIdentitySize})
	if err != nil {
		return Registration{State: RegistrationInvalid, Error: fmt.Sprintf("%v: %v", noderoot.ErrIdentity, err)}, nil
	}
	nid, err := noderoot.ParseNodeIdentity(data)
	if err != nil {
		return Registration{State: RegistrationInvalid, Error: err.Error()}, nil
	}
	reg := Registration{State: RegistrationPending, NodeID: nid.Identity.NodeID, CoreURL: nid.CoreURL}
	if nid.Identity.InstallationID != req.InstallationID {
		reg.State, reg.Error = RegistrationInvalid, fmt.Sprintf("%v: it names installation %s", noderoot.ErrIdentity, nid.Identity.InstallationID)
		return reg, nil
	}
	if registered {
		reg.State = RegistrationDone
	}
	if req.CoreURL == "" {
		return reg, &CoreView{State: CoreNotAsked, Error: "no host record names this node's Core"}
	}
	return reg, askCoreStatus(ctx, root, uid, p, nid, req)
}

// present reports whether rel exists under root (not following links).
func present(root *safefile.Root, rel string) (bool, error) {
	ok, err := root.Exists(rel)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", root.Join(rel), err)
	}
	return ok, nil
}

// statusAnswer is Core's identity answer as status reads it: the echo it
// checks, the readiness flags and a diagnostic a newer Core may add.
type statusAnswer struct {
	NodeID         string               `json:"node_id,omitempty"`
	InstallationID ident.InstallationID `json:"installation_id,omitempty"`
	Connected      bool                 `json:"connected,omitempty"`
	ProviderReady  bool                 `json:"provider_ready,omitempty"`
	Diagnostic     string               `json:"diagnostic,omitempty"`
}

// diagnosticCode is the shape of a diagnostic code; anything else Core
// sends is not shown. Compiled at its first use, not at start: most runs of
// the installer, and every service-account child but status's, never ask.
var diagnosticCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`) })

// identityAnswerFormat reads Core's identity answer: strict, other keys
// skipped.
var identityAnswerFormat = strictjson.Format{MaxSize: core.MaxConfigurationSize, AllowUnknownKeys: true}

// askCoreStatus asks Core's identity route once, at root's address of Core.
func askCoreStatus(ctx context.Context, root *safefile.Root, uid int, p proxy.Env, nid *noderoot.NodeIdentity, req NodeRequest) *CoreView {
	origin := strings.TrimRight(req.CoreURL, "/")
	view := &CoreView{URL: origin}
	fail := func(state string, err error) *CoreView {
		view.State, view.Error = state, err.Error()
		return view
	}
	// Core's address and policy are root's, not the identity's.
	nid.CoreURL, nid.AllowInsecureOrigin = origin, req.AllowInsecureOrigin
	pool, err := noderoot.CoreRoots(root, uid, req.CoreCASHA256)
	if err != nil {
		return fail(CoreNotAsked, err)
	}
	c, err := noderoot.NewCoreClient(nid, pool, p)
	if err != nil {
		return fail(CoreNotAsked, err)
	}
	rctx, cancel := context.WithTimeout(ctx, coreTimeout)
	defer cancel()
	resp, err := c.Identity(rctx)
	var notSent *core.RequestError
	switch {
	case errors.As(err, &notSent):
		return fail(CoreNotAsked, notSent.Err)
	case err != nil && rctx.Err() != nil:
		return fail(CoreUnreachable, fmt.Errorf("no answer within %s", coreTimeout))
	case err != nil:
		return fail(CoreUnreachable, errors.New(core.TransportReason(err)))
	}
	defer resp.Body.Close()
	view.HTTPStatus = resp.StatusCode
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		view.State = CoreRemoved
		return view
	case resp.StatusCode != http.StatusOK:
		return fail(CoreAnswered, fmt.Errorf("Core answered HTTP %d", resp.StatusCode))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, core.MaxConfigurationSize+1))
	if err != nil {
		return fail(CoreUnreachable, errors.New(core.TransportReason(err)))
	}
	var a statusAnswer
	if err := identityAnswerFormat.Decode(body, &a); err != nil {
		return fail(CoreAnswered, fmt.Errorf("Core's identity answer is not valid: %v", err))
	}
	if a.NodeID != nid.Identity.NodeID || a.InstallationID != nid.Identity.InstallationID {
		return fail(CoreAnswered, errors.New("Core answered for a different node identity"))
	}
	view.Connected, view.ProviderReady = a.Connected, a.ProviderReady
	if diagnosticCode().MatchString(a.Diagnostic) {
		view.Diagnostic = a.Diagnostic
	}
	switch {
	case a.Connected && a.ProviderReady:
		view.State = CoreReady
	case a.Connected:
		view.State = CoreProviderNotReady
	default:
		view.State = CoreNotConnected
	}
	return view
}
