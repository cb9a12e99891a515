package provider

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// ReleaseDir returns the directory holding the Runtime files c uses: the
// node root for the files the installation downloaded, or
// <root>/releases/<source_commit> for a later release. The files are at
// their catalog paths below it (runtime/seccomp.json,
// native/microsandbox/msb, …); a configuration whose paths do not share one
// such directory is refused.
func (c *Config) ReleaseDir() (string, error) {
	switch {
	case c.Docker != nil:
		dir, ok := strings.CutSuffix(c.Docker.SeccompFile, "/"+release.PathSeccomp)
		if !ok || dir == "" {
			return "", fmt.Errorf("%w: docker.seccomp_file %s is not <dir>/%s", ErrPlanMismatch, c.Docker.SeccompFile, release.PathSeccomp)
		}
		return dir, nil
	case c.Microsandbox != nil:
		m := c.Microsandbox
		dir, ok := strings.CutSuffix(m.HelperPath, "/"+release.PathMicroHelper)
		if !ok || dir == "" || m.RuntimePath != dir+"/"+release.PathMicroRuntime || m.FirmwarePath != dir+"/"+release.PathMicroFirmware {
			return "", fmt.Errorf("%w: the microsandbox helper, runtime and firmware paths are not the catalog paths of one directory", ErrPlanMismatch)
		}
		return dir, nil
	}
	return "", fmt.Errorf("%w: no adapter object", ErrPlanMismatch)
}

// Paths returns every path c names on the node, sorted as written.
func (c *Config) Paths() []string {
	switch {
	case c.Docker != nil:
		return []string{c.Docker.SeccompFile}
	case c.Microsandbox != nil:
		m := c.Microsandbox
		return []string{m.HelperPath, m.RuntimePath, m.FirmwarePath, m.RuntimeHome}
	}
	return nil
}

// PlanDir is where a later generation of base with specification spec
// keeps its Runtime files: the node root when it runs the base
// configuration's release from the node root, else
// <root>/releases/<source_commit>.
func PlanDir(base *Config, spec *release.Specification, root string) string {
	if dir, err := base.ReleaseDir(); err == nil && dir == root && spec.Runtime.SourceCommit == base.Specification.Runtime.SourceCommit {
		return root
	}
	return filepath.Join(root, layout.ReleasesDir, spec.Runtime.SourceCommit)
}

// Plan builds the planned configuration of generation g with specification
// spec, from the base configuration of the node whose root and account
// home are given: the base's installation, provider, Core URL, Docker host
// and network or microsandbox network policy; Runtime files in PlanDir;
// for Docker the specification's image_id (the final configuration records
// the resolved local ID); for microsandbox the base store when runtime and
// firmware are the base's, else the runtime's own store.
func Plan(base *Config, spec *release.Specification, g int64, root, home string) (*Config, error) {
	if spec.Provider != base.Provider || spec.Runtime == nil {
		return nil, fmt.Errorf("%w: the specification is for provider %s, the node runs %s", ErrPlanMismatch, spec.Provider, base.Provider)
	}
	dir := PlanDir(base, spec, root)
	p := &Config{
		InstallationID: base.InstallationID,
		Provider:       base.Provider,
		CoreURL:        base.CoreURL,
		Generation:     g,
		Specification:  spec,
	}
	switch {
	case base.Docker != nil:
		p.Docker = &DockerConfig{
			Host:          base.Docker.Host,
			Image:         spec.Runtime.ImageID,
			Network:       base.Docker.Network,
			SeccompFile:   filepath.Join(dir, release.PathSeccomp),
			NestedSandbox: base.Docker.NestedSandbox,
		}
	case base.Microsandbox != nil:
		home, err := storeFor(base, spec, home)
		if err != nil {
			return nil, err
		}
		p.Microsandbox = &MicrosandboxConfig{
			HelperPath:         filepath.Join(dir, release.PathMicroHelper),
			RuntimePath:        filepath.Join(dir, release.PathMicroRuntime),
			FirmwarePath:       filepath.Join(dir, release.PathMicroFirmware),
			RuntimeSHA256:      spec.Runtime.RuntimeSHA256,
			FirmwareSHA256:     spec.Runtime.FirmwareSHA256,
			RuntimeHome:        home,
			Image:              spec.Runtime.MicrosandboxRef,
			CPUs:               spec.Resources.CPUs,
			MemoryMiB:          spec.Resources.MemoryMiB,
			RootDiskMiB:        spec.Resources.RootDiskMiB,
			EnvironmentDiskMiB: spec.Resources.EnvironmentDiskMiB,
			Network:            base.Microsandbox.Network,
		}
		p.Microsandbox.Network.Rules = append([]Rule(nil), base.Microsandbox.Network.Rules...)
	}
	if err := CheckPlan(p, base, root, home); err != nil {
		return nil, err
	}
	return p, nil
}

// storeFor is the microsandbox store of a later generation.
func storeFor(base *Config, spec *release.Specification, home string) (string, error) {
	brt := base.Specification.Runtime
	if spec.Runtime.RuntimeSHA256 == brt.RuntimeSHA256 && spec.Runtime.FirmwareSHA256 == brt.FirmwareSHA256 {
		return base.Microsandbox.RuntimeHome, nil
	}
	return GenerationStorePath(home, base.InstallationID, spec.Runtime.RuntimeSHA256, spec.Runtime.FirmwareSHA256)
}

// CheckPlan checks a plan (or a final configuration) of a later generation
// against the node: it must be valid, name the base configuration's
// installation, provider and Core URL, keep its Runtime files in the node
// root or <root>/releases/<its own source_commit>, and for Docker use the
// base's host and network and one of the specification's image
// identities; for microsandbox the base's network policy and a store of the
// installation. Failures wrap ErrPlanMismatch (or ErrMalformed).
func CheckPlan(p, base *Config, root, home string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	mismatch := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrPlanMismatch, fmt.Sprintf(format, args...))
	}
	switch {
	case p.InstallationID != base.InstallationID:
		return mismatch("installation %s, the node's provider.json has %s", p.InstallationID, base.InstallationID)
	case p.Provider != base.Provider:
		return mismatch("provider %s, the node's provider.json has %s", p.Provider, base.Provider)
	case p.CoreURL != base.CoreURL:
		return mismatch("core_url %s, the node's provider.json has %s", p.CoreURL, base.CoreURL)
	}
	dir, err := p.ReleaseDir()
	if err != nil {
		return err
	}
	own := filepath.Join(root, layout.ReleasesDir, p.Specification.Runtime.SourceCommit)
	if dir != root && dir != own {
		return mismatch("Runtime files in %s, outside the node root and %s", dir, own)
	}
	switch {
	case p.Docker != nil:
		rt := p.Specification.Runtime
		if p.Docker.Image != rt.ImageID && p.Docker.Image != rt.ImageManifestDigest {
			return mismatch("docker image %s is neither the specification's image_id nor its image_manifest_digest", p.Docker.Image)
		}
		if p.Docker.Host != base.Docker.Host || p.Docker.Network != base.Docker.Network {
			return mismatch("docker host or network differs from the node's provider.json")
		}
	case p.Microsandbox != nil:
		want, err := storeFor(base, p.Specification, home)
		if err != nil {
			return err
		}
		if p.Microsandbox.RuntimeHome != want {
			return mismatch("microsandbox runtime_home %s, expected %s", p.Microsandbox.RuntimeHome, want)
		}
		if !p.Microsandbox.Network.Equal(base.Microsandbox.Network) {
			return mismatch("microsandbox network policy differs from the node's provider.json")
		}
	}
	return nil
}

// CheckFinal checks a final configuration against its plan: equal in
// everything but the Docker image, which must be one of the
// specification's identities (the local ID the resolver returned).
// Failures wrap ErrDrift.
func CheckFinal(final, plan *Config) error {
	if err := final.Validate(); err != nil {
		return err
	}
	cmp := final.Clone()
	if cmp.Docker != nil && plan.Docker != nil {
		rt := final.Specification.Runtime
		if final.Docker.Image != rt.ImageID && final.Docker.Image != rt.ImageManifestDigest {
			return fmt.Errorf("%w: docker image %s is neither the specification's image_id nor its image_manifest_digest", ErrDrift, final.Docker.Image)
		}
		cmp.Docker.Image = plan.Docker.Image
	}
	if !Equal(cmp, plan) {
		return fmt.Errorf("%w: generation %d's configuration differs from its preparation plan", ErrDrift, final.Generation)
	}
	return nil
}
