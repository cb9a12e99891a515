package generation

import (
	"context"
	"net/http"
	"net/url"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
)

// What steps/status reads through this package, as the service account:
// the node root opened as uninstall opens it, the Core CA copy checked as
// uninstall checks it, and Core's identity route asked with the node's
// credential, which never leaves CoreClient.

// OpenNodeRoot opens the node root of installation id beneath home,
// through no symbolic link (the home's subdirectories are the service
// account's to replace).
func OpenNodeRoot(home, id string) (*safefile.Root, error) {
	return UninstallOptions{Home: home}.openNodeRoot(id)
}

// CoreRoots is the system roots plus the node's CA copy in root, which
// must be owned by uid and have the sha256 root recorded; with no sha256
// recorded, the system roots only.
func CoreRoots(root *safefile.Root, uid int, sha string) (*trust.Roots, error) {
	return uninstallPool(root, uid, sha)
}

// TransportReason is a transport error without the URL (which carries the
// query) and without anything a proxy setting holds.
func TransportReason(err error) string { return transportReason(err) }

// RequestError is GetIdentity's error when its request could not be
// built: nothing was sent.
type RequestError struct{ Err error }

func (e *RequestError) Error() string { return e.Err.Error() }
func (e *RequestError) Unwrap() error { return e.Err }

// GetIdentity GETs Core's identity route for the client's node,
// <origin>/api/v1/sandbox-node/identity?node_id=<id>, once, with the node
// credential (CONTRACT §2.3). The caller closes the answer's body. An
// error is a *RequestError when nothing was sent, else http.Client's.
func (c *CoreClient) GetIdentity(ctx context.Context) (*http.Response, error) {
	u := c.origin + "/api/v1/sandbox-node/identity?node_id=" + url.QueryEscape(c.nodeID)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &RequestError{Err: err}
	}
	req.Header.Set("Authorization", "Bearer "+c.credential)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "oac-node-install")
	return c.http.Do(req)
}
