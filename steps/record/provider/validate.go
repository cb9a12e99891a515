package provider

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Validate checks every value of c against the format: a canonical
// installation UUID, a known provider whose adapter alone is set, core_url
// an HTTP(S) origin followed by /api/v1, a specification for the provider
// with a Runtime, and the adapter's values (absolute clean paths, digests,
// the installation's Docker network, microsandbox values equal to the
// specification's, a deny-by-default network policy). Failures are
// *FieldError (ErrMalformed).
func (c *Config) Validate() error {
	if !c.InstallationID.Valid() {
		return fieldErr("installation_id", "must be a canonical UUID")
	}
	if err := checkCoreURL(c.CoreURL); err != nil {
		return err
	}
	if c.Generation < 1 {
		return fieldErr("generation", "must be at least 1")
	}
	s := c.Specification
	if s == nil || s.Runtime == nil {
		return fieldErr("specification", "missing, or without a runtime")
	}
	if s.Provider != c.Provider {
		return fieldErr("specification", "is for provider %q, not %q", s.Provider, c.Provider)
	}
	switch c.Provider {
	case release.ProviderDocker:
		if c.Docker == nil || c.Microsandbox != nil {
			return fieldErr("docker", "a docker configuration has exactly the docker adapter object")
		}
		return c.Docker.validate(c.InstallationID)
	case release.ProviderMicrosandbox:
		if c.Microsandbox == nil || c.Docker != nil {
			return fieldErr("microsandbox", "a microsandbox configuration has exactly the microsandbox adapter object")
		}
		return c.Microsandbox.validate(s)
	}
	return fieldErr("provider", "must be %q or %q", release.ProviderDocker, release.ProviderMicrosandbox)
}

func (d *DockerConfig) validate(installationID ident.InstallationID) error {
	sock, ok := strings.CutPrefix(d.Host, "unix://")
	if !ok || !cleanAbs(sock) {
		return fieldErr("docker.host", "must be unix:// and an absolute socket path")
	}
	if !release.IsDigest(d.Image) {
		return fieldErr("docker.image", "must be sha256:<64 hex>")
	}
	if d.Network != NetworkName(installationID) {
		return fieldErr("docker.network", "must be %s", NetworkName(installationID))
	}
	if !cleanAbs(d.SeccompFile) {
		return fieldErr("docker.seccomp_file", "must be an absolute clean path")
	}
	return nil
}

func (m *MicrosandboxConfig) validate(s *release.Specification) error {
	for _, p := range []struct{ key, v string }{
		{"helper_path", m.HelperPath}, {"runtime_path", m.RuntimePath},
		{"firmware_path", m.FirmwarePath}, {"runtime_home", m.RuntimeHome},
	} {
		if !cleanAbs(p.v) {
			return fieldErr("microsandbox."+p.key, "must be an absolute clean path")
		}
	}
	rt := s.Runtime
	switch {
	case m.RuntimeSHA256 != rt.RuntimeSHA256:
		return fieldErr("microsandbox.runtime_sha256", "differs from the specification's")
	case m.FirmwareSHA256 != rt.FirmwareSHA256:
		return fieldErr("microsandbox.firmware_sha256", "differs from the specification's")
	case m.Image != rt.MicrosandboxRef:
		return fieldErr("microsandbox.image", "differs from the specification's microsandbox_ref")
	case m.CPUs != s.Resources.CPUs:
		return fieldErr("microsandbox.cpus", "differs from the specification's")
	case m.MemoryMiB != s.Resources.MemoryMiB:
		return fieldErr("microsandbox.memory_mib", "differs from the specification's")
	case m.RootDiskMiB != s.Resources.RootDiskMiB:
		return fieldErr("microsandbox.root_disk_mib", "differs from the specification's")
	case m.EnvironmentDiskMiB != s.Resources.EnvironmentDiskMiB:
		return fieldErr("microsandbox.environment_disk_mib", "differs from the specification's")
	}
	return m.Network.validate("microsandbox.network")
}

// checkCoreURL requires <http(s) origin>/api/v1.
func checkCoreURL(s string) error {
	origin, ok := strings.CutSuffix(s, APIPath)
	if !ok {
		return fieldErr("core_url", "must end with %s", APIPath)
	}
	if _, err := CheckOrigin(origin); err != nil {
		return fieldErr("core_url", "%v", err)
	}
	return nil
}

// CheckOrigin checks an http(s) origin by ident.ParseOrigin, without even
// a trailing "/", and returns it parsed.
func CheckOrigin(origin string) (*url.URL, error) {
	u, err := ident.ParseOrigin(origin)
	var oe *ident.OriginError
	switch {
	case errors.As(err, &oe) && oe.Reason == ident.OriginNotHTTP:
		return nil, fieldErr("", "%q is not an http(s) origin", origin)
	case err != nil || u.Path != "":
		return nil, fieldErr("", "%q is not an origin (credentials, path, query or fragment)", origin)
	}
	return u, nil
}

// CoreURL is the core_url of Core's origin: <origin>/api/v1.
func CoreURL(origin string) string { return strings.TrimRight(origin, "/") + APIPath }

// Origin is the origin a core_url names.
func (c *Config) Origin() string { return strings.TrimSuffix(c.CoreURL, APIPath) }

func cleanAbs(p string) bool {
	return p != "" && filepath.IsAbs(p) && filepath.Clean(p) == p && !strings.ContainsAny(p, "\x00\n")
}
