package generation

import (
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
)

// What steps/status reads through this package, as the service account:
// the node root opened as uninstall opens it, the Core CA copy checked as
// uninstall checks it; Core's identity route is asked through the
// steps/host/core client NewCoreClient returns.

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
