package provider

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// The document shapes of CONTRACT §3.1, for the strict decoder: every key
// required unless tagged omitempty, no other key.
type configDoc struct {
	InstallationID ident.InstallationID `json:"installation_id"`
	Provider       string               `json:"provider"`
	CoreURL        string               `json:"core_url"`
	Generation     int64                `json:"generation"`
	Specification  json.RawMessage      `json:"specification"`
	Docker         *dockerDoc           `json:"docker,omitempty"`
	Microsandbox   *microsandboxDoc     `json:"microsandbox,omitempty"`
}

type dockerDoc struct {
	Host          string `json:"host"`
	Image         string `json:"image"`
	Network       string `json:"network"`
	SeccompFile   string `json:"seccomp_file"`
	NestedSandbox bool   `json:"nested_sandbox"`
}

type microsandboxDoc struct {
	HelperPath         string     `json:"helper_path"`
	RuntimePath        string     `json:"runtime_path"`
	FirmwarePath       string     `json:"firmware_path"`
	RuntimeSHA256      string     `json:"runtime_sha256"`
	FirmwareSHA256     string     `json:"firmware_sha256"`
	RuntimeHome        string     `json:"runtime_home"`
	Image              string     `json:"image"`
	CPUs               int64      `json:"cpus"`
	MemoryMiB          int64      `json:"memory_mib"`
	RootDiskMiB        int64      `json:"root_disk_mib"`
	EnvironmentDiskMiB int64      `json:"environment_disk_mib"`
	Network            networkDoc `json:"network"`
}

type networkDoc struct {
	DefaultEgress  string    `json:"default_egress"`
	DefaultIngress string    `json:"default_ingress"`
	Rules          []ruleDoc `json:"rules"`
}

// ruleDoc's optional keys are pointers: present but empty is refused.
type ruleDoc struct {
	Action      string  `json:"action"`
	Direction   string  `json:"direction"`
	Destination string  `json:"destination"`
	Protocol    *string `json:"protocol,omitempty"`
	Port        *string `json:"port,omitempty"`
}

var configFormat = strictjson.Format{MaxSize: MaxSize}

// Parse reads a provider configuration with the format's exact key sets
// and value types, then validates it (see Validate). Failures wrap
// ErrMalformed (and the release package's specification errors for a bad
// specification).
func Parse(data []byte) (*Config, error) {
	var doc configDoc
	if err := configFormat.Decode(data, &doc); err != nil {
		var se *strictjson.Error
		if errors.As(err, &se) {
			return nil, fieldErr(se.Path, "%s", se.Reason)
		}
		return nil, fieldErr("", "%v", err)
	}
	c := &Config{
		InstallationID: doc.InstallationID,
		Provider:       doc.Provider,
		CoreURL:        doc.CoreURL,
		Generation:     doc.Generation,
	}
	if c.Generation < 1 {
		return nil, fieldErr("generation", "%d is outside [1, %d]", c.Generation, int64(math.MaxInt64))
	}
	switch c.Provider {
	case release.ProviderDocker, release.ProviderMicrosandbox:
	default:
		return nil, fieldErr("provider", "must be %q or %q", release.ProviderDocker, release.ProviderMicrosandbox)
	}
	var err error
	if c.Specification, err = release.ParseSpecification(c.Provider, doc.Specification); err != nil {
		return nil, fmt.Errorf("%w: specification: %w", ErrMalformed, err)
	}
	// Exactly the adapter object the provider names.
	switch {
	case c.Provider == release.ProviderDocker && doc.Docker == nil:
		return nil, fieldErr("docker", "missing")
	case c.Provider == release.ProviderDocker && doc.Microsandbox != nil:
		return nil, fieldErr("microsandbox", "unknown key")
	case c.Provider == release.ProviderMicrosandbox && doc.Microsandbox == nil:
		return nil, fieldErr("microsandbox", "missing")
	case c.Provider == release.ProviderMicrosandbox && doc.Docker != nil:
		return nil, fieldErr("docker", "unknown key")
	}
	if d := doc.Docker; d != nil {
		c.Docker = &DockerConfig{Host: d.Host, Image: d.Image, Network: d.Network, SeccompFile: d.SeccompFile, NestedSandbox: d.NestedSandbox}
	}
	if m := doc.Microsandbox; m != nil {
		if c.Microsandbox, err = m.config(); err != nil {
			return nil, err
		}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func (m *microsandboxDoc) config() (*MicrosandboxConfig, error) {
	for _, r := range []struct {
		key string
		n   int64
	}{{"cpus", m.CPUs}, {"memory_mib", m.MemoryMiB}, {"root_disk_mib", m.RootDiskMiB}, {"environment_disk_mib", m.EnvironmentDiskMiB}} {
		if r.n < 0 || r.n > release.MaxDiskMiB {
			return nil, fieldErr("microsandbox."+r.key, "%d is outside [0, %d]", r.n, int64(release.MaxDiskMiB))
		}
	}
	out := &MicrosandboxConfig{
		HelperPath: m.HelperPath, RuntimePath: m.RuntimePath, FirmwarePath: m.FirmwarePath,
		RuntimeSHA256: m.RuntimeSHA256, FirmwareSHA256: m.FirmwareSHA256,
		RuntimeHome: m.RuntimeHome, Image: m.Image,
		CPUs: m.CPUs, MemoryMiB: m.MemoryMiB, RootDiskMiB: m.RootDiskMiB, EnvironmentDiskMiB: m.EnvironmentDiskMiB,
		Network: Network{DefaultEgress: m.Network.DefaultEgress, DefaultIngress: m.Network.DefaultIngress},
	}
	for i, rd := range m.Network.Rules {
		path := "microsandbox.network.rules[" + strconv.Itoa(i) + "]"
		r := Rule{Action: rd.Action, Direction: rd.Direction, Destination: rd.Destination}
		for _, opt := range []struct {
			key string
			src *string
			dst *string
		}{{"protocol", rd.Protocol, &r.Protocol}, {"port", rd.Port, &r.Port}} {
			if opt.src == nil {
				continue
			}
			if *opt.src == "" {
				return nil, fieldErr(path+"."+opt.key, "is empty (omit the key instead)")
			}
			*opt.dst = *opt.src
		}
		out.Network.Rules = append(out.Network.Rules, r)
	}
	return out, nil
}

// IsMalformed reports whether err says a configuration could not be read
// (as opposed to a configuration that reads but does not fit its node).
func IsMalformed(err error) bool { return errors.Is(err, ErrMalformed) }
