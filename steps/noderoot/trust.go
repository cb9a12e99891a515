package noderoot

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// CertPool is the system roots plus the node's retained Core CA (the
// system roots loaded only for a server the CA does not verify).
func (e *Env) CertPool() (*trust.Roots, error) {
	if e.roots != nil {
		return e.roots, nil
	}
	if e.bound {
		e.roots = e.preset
		return e.roots, nil
	}
	id, err := e.NodeIdentity()
	if err != nil {
		return nil, err
	}
	var pem []byte
	if id.CoreCA != "" {
		rel, err := filepath.Rel(e.node.Root, id.CoreCA)
		if err != nil || strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			return nil, fmt.Errorf("%w: core_ca %s is not inside the node root", ErrIdentity, id.CoreCA)
		}
		if pem, err = e.ReadPrivate(rel, 1<<20); err != nil {
			return nil, fmt.Errorf("Core CA: %w", err)
		}
		if release.SHA256Hex(pem) != id.CoreCASHA256 {
			return nil, fmt.Errorf("%w: %s does not have the recorded core_ca_sha256", ErrIdentity, id.CoreCA)
		}
	}
	roots, err := trust.New(pem)
	if err != nil {
		return nil, fmt.Errorf("%w: %s holds no certificate", ErrIdentity, id.CoreCA)
	}
	e.roots = roots
	return roots, nil
}
