package provider

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// Fixed values of the format (CONTRACT §3.1).
const (
	// APIPath is appended to Core's origin to form core_url.
	APIPath = "/api/v1"
	// DockerHost is the Docker Engine socket every node uses.
	DockerHost = "unix:///var/run/docker.sock"
	// MaxSize bounds a configuration file in bytes.
	MaxSize = 1 << 20
)

// Config is a provider configuration: provider.json or <g>.json. Exactly
// one adapter, the one Provider names, is set.
type Config struct {
	// InstallationID is checked by Validate (Parse), not by decoding.
	InstallationID ident.InstallationID
	Provider       string // release.ProviderDocker or release.ProviderMicrosandbox
	CoreURL        string // <origin>/api/v1
	Generation     int64
	Specification  *release.Specification
	Docker         *DockerConfig
	Microsandbox   *MicrosandboxConfig
}

// DockerConfig is the docker adapter object.
type DockerConfig struct {
	Host string // DockerHost
	// Image is the immutable local image ID: in a plan, one of the
	// specification's image_id and image_manifest_digest; in a final
	// configuration, what the resolver returned.
	Image         string
	Network       string // NetworkName(installation_id)
	SeccompFile   string // absolute path of runtime/seccomp.json
	NestedSandbox bool
}

// MicrosandboxConfig is the microsandbox adapter object. The resources are
// the specification's, flattened.
type MicrosandboxConfig struct {
	HelperPath         string
	RuntimePath        string
	FirmwarePath       string
	RuntimeSHA256      string
	FirmwareSHA256     string
	RuntimeHome        string
	Image              string // the specification's microsandbox_ref
	CPUs               int64
	MemoryMiB          int64
	RootDiskMiB        int64
	EnvironmentDiskMiB int64
	Network            Network
}

// NetworkName is the Docker network of an installation.
func NetworkName(installationID ident.InstallationID) string {
	return "oac-node-" + string(installationID)
}

// Clone returns a deep copy of c.
func (c *Config) Clone() *Config {
	n := *c
	if c.Specification != nil {
		s := *c.Specification
		if c.Specification.Runtime != nil {
			rt := *c.Specification.Runtime
			s.Runtime = &rt
		}
		n.Specification = &s
	}
	if c.Docker != nil {
		d := *c.Docker
		n.Docker = &d
	}
	if c.Microsandbox != nil {
		m := *c.Microsandbox
		m.Network.Rules = append([]Rule(nil), c.Microsandbox.Network.Rules...)
		n.Microsandbox = &m
	}
	return &n
}

// Marshal validates c and writes it as the platform does: sorted keys,
// two-space indentation, a trailing newline, no HTML escaping.
func (c *Config) Marshal() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	doc := map[string]any{
		"installation_id": c.InstallationID,
		"provider":        c.Provider,
		"core_url":        c.CoreURL,
		"generation":      c.Generation,
		"specification":   specificationDoc(c.Specification),
	}
	if d := c.Docker; d != nil {
		doc["docker"] = map[string]any{
			"host":           d.Host,
			"image":          d.Image,
			"network":        d.Network,
			"seccomp_file":   d.SeccompFile,
			"nested_sandbox": d.NestedSandbox,
		}
	}
	if m := c.Microsandbox; m != nil {
		doc["microsandbox"] = map[string]any{
			"helper_path":          m.HelperPath,
			"runtime_path":         m.RuntimePath,
			"firmware_path":        m.FirmwarePath,
			"runtime_sha256":       m.RuntimeSHA256,
			"firmware_sha256":      m.FirmwareSHA256,
			"runtime_home":         m.RuntimeHome,
			"image":                m.Image,
			"cpus":                 m.CPUs,
			"memory_mib":           m.MemoryMiB,
			"root_disk_mib":        m.RootDiskMiB,
			"environment_disk_mib": m.EnvironmentDiskMiB,
			"network":              m.Network.doc(),
		}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode provider configuration: %w", err)
	}
	return b.Bytes(), nil
}

// specificationDoc is the specification object as Core sends it
// ({resources, runtime}), zero disks omitted, for sorted-key encoding.
func specificationDoc(s *release.Specification) map[string]any {
	res := map[string]any{"cpus": s.Resources.CPUs, "memory_mib": s.Resources.MemoryMiB}
	if s.Resources.RootDiskMiB != 0 {
		res["root_disk_mib"] = s.Resources.RootDiskMiB
	}
	if s.Resources.EnvironmentDiskMiB != 0 {
		res["environment_disk_mib"] = s.Resources.EnvironmentDiskMiB
	}
	doc := map[string]any{"resources": res}
	if rt := s.Runtime; rt != nil {
		doc["runtime"] = map[string]any{
			"source_commit":         rt.SourceCommit,
			"image_id":              rt.ImageID,
			"image_manifest_digest": rt.ImageManifestDigest,
			"microsandbox_ref":      rt.MicrosandboxRef,
			"runtime_sha256":        rt.RuntimeSHA256,
			"firmware_sha256":       rt.FirmwareSHA256,
		}
	}
	return doc
}

// Equal reports whether a and b are the same configuration (equal bytes).
func Equal(a, b *Config) bool {
	x, errA := a.Marshal()
	y, errB := b.Marshal()
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
