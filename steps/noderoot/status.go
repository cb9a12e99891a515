package noderoot

import (
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// What steps/status reads through this package, as the service account:
// the node root opened as uninstall opens it, the Core CA copy checked as
// uninstall checks it; Core's identity route is asked through the
// steps/host/core client NewCoreClient returns.

// OpenNodeRoot opens the node root of installation id beneath home,
// through no symbolic link (the home's subdirectories are the service
// account's to replace).
func OpenNodeRoot(home string, id ident.InstallationID) (*safefile.Root, error) {
	return safefile.OpenRootIn(home, layout.NodeRel(id), safefile.Expect{UID: safefile.AnyUID})
}

// CoreRoots is the system roots plus the node's CA copy in root, which
// must be owned by uid and have the sha256 root recorded; with no sha256
// recorded, the system roots only. Uninstall's Core check trusts the same.
func CoreRoots(root *safefile.Root, uid int, sha string) (*trust.Roots, error) {
	if sha == "" {
		return trust.New(nil)
	}
	pem, err := root.ReadFile(layout.CoreCAFile, safefile.Expect{UID: uid, MaxSize: 1 << 20})
	if err != nil {
		return nil, fmt.Errorf("Core CA: %w", err)
	}
	if release.SHA256Hex(pem) != sha {
		return nil, fmt.Errorf("%w: %s does not have the recorded core_ca_sha256", ErrIdentity, root.Join(layout.CoreCAFile))
	}
	roots, err := trust.New(pem)
	if err != nil {
		return nil, fmt.Errorf("%w: %s holds no certificate", ErrIdentity, root.Join(layout.CoreCAFile))
	}
	return roots, nil
}
