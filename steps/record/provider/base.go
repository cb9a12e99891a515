package provider

import (
	"fmt"
	"net/netip"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// BaseInput is what an installation knows when it writes the node's base
// configuration (provider.json): Core's answer and the node's paths.
type BaseInput struct {
	InstallationID ident.InstallationID
	// CoreOrigin is Core's public URL in origin form; the configuration
	// stores <origin>/api/v1.
	CoreOrigin    string
	Generation    int64
	Specification *release.Specification
	// Root is the node root; Home the service account's home (where the
	// microsandbox store is).
	Root string
	Home string
	// Image is the local Docker image ID the resolver returned (Docker).
	Image string
	// CoreAddrs are Core's resolved addresses, the only egress a
	// microsandbox sandbox gets besides the public network and DNS.
	CoreAddrs []netip.AddrPort
}

// Base builds the base configuration of a new node: the enrolled
// generation's Runtime files in the node root, the standard Docker socket
// and the installation's network, or the installation's own microsandbox
// store. The result is validated.
func Base(in BaseInput) (*Config, error) {
	spec := in.Specification
	if spec == nil || spec.Runtime == nil {
		return nil, fmt.Errorf("%w: a node's specification must name its Runtime", ErrMalformed)
	}
	c := &Config{
		InstallationID: in.InstallationID,
		Provider:       spec.Provider,
		CoreURL:        CoreURL(in.CoreOrigin),
		Generation:     in.Generation,
		Specification:  spec,
	}
	switch spec.Provider {
	case release.ProviderDocker:
		c.Docker = &DockerConfig{
			Host:          DockerHost,
			Image:         in.Image,
			Network:       NetworkName(in.InstallationID),
			SeccompFile:   filepath.Join(in.Root, release.PathSeccomp),
			NestedSandbox: true,
		}
	case release.ProviderMicrosandbox:
		store, err := StorePath(in.Home, in.InstallationID)
		if err != nil {
			return nil, err
		}
		c.Microsandbox = &MicrosandboxConfig{
			HelperPath:         filepath.Join(in.Root, release.PathMicroHelper),
			RuntimePath:        filepath.Join(in.Root, release.PathMicroRuntime),
			FirmwarePath:       filepath.Join(in.Root, release.PathMicroFirmware),
			RuntimeSHA256:      spec.Runtime.RuntimeSHA256,
			FirmwareSHA256:     spec.Runtime.FirmwareSHA256,
			RuntimeHome:        store,
			Image:              spec.Runtime.MicrosandboxRef,
			CPUs:               spec.Resources.CPUs,
			MemoryMiB:          spec.Resources.MemoryMiB,
			RootDiskMiB:        spec.Resources.RootDiskMiB,
			EnvironmentDiskMiB: spec.Resources.EnvironmentDiskMiB,
			Network:            MicrosandboxNetwork(in.CoreAddrs),
		}
	default:
		return nil, fmt.Errorf("%w: provider %q is not a node provider", ErrMalformed, spec.Provider)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
