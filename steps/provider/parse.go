package provider

import (
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/openagentcore/oac-node-install/steps/release"
)

// Parse reads a provider configuration with the format's exact key sets
// and value types, then validates it (see Validate). Failures wrap
// ErrMalformed (and the release package's specification errors for a bad
// specification).
func Parse(data []byte) (*Config, error) {
	if len(data) > MaxSize {
		return nil, fieldErr("", "%d bytes, at most %d", len(data), MaxSize)
	}
	top, err := decodeObject("", data)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if c.InstallationID, err = top.str("installation_id"); err != nil {
		return nil, err
	}
	if c.Provider, err = top.str("provider"); err != nil {
		return nil, err
	}
	if c.CoreURL, err = top.str("core_url"); err != nil {
		return nil, err
	}
	if c.Generation, err = top.integer("generation", 1, math.MaxInt64); err != nil {
		return nil, err
	}
	rawSpec, err := top.raw("specification")
	if err != nil {
		return nil, err
	}
	switch c.Provider {
	case release.ProviderDocker, release.ProviderMicrosandbox:
	default:
		return nil, fieldErr("provider", "must be %q or %q", release.ProviderDocker, release.ProviderMicrosandbox)
	}
	if c.Specification, err = release.ParseSpecification(c.Provider, rawSpec); err != nil {
		return nil, fmt.Errorf("%w: specification: %w", ErrMalformed, err)
	}
	switch c.Provider {
	case release.ProviderDocker:
		o, err := top.object("docker")
		if err != nil {
			return nil, err
		}
		if c.Docker, err = parseDocker(o); err != nil {
			return nil, err
		}
	case release.ProviderMicrosandbox:
		o, err := top.object("microsandbox")
		if err != nil {
			return nil, err
		}
		if c.Microsandbox, err = parseMicrosandbox(o); err != nil {
			return nil, err
		}
	}
	if err := top.done(); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

func parseDocker(o *members) (*DockerConfig, error) {
	d := &DockerConfig{}
	var err error
	for _, f := range []struct {
		key string
		dst *string
	}{{"host", &d.Host}, {"image", &d.Image}, {"network", &d.Network}, {"seccomp_file", &d.SeccompFile}} {
		if *f.dst, err = o.str(f.key); err != nil {
			return nil, err
		}
	}
	if d.NestedSandbox, err = o.boolean("nested_sandbox"); err != nil {
		return nil, err
	}
	return d, o.done()
}

func parseMicrosandbox(o *members) (*MicrosandboxConfig, error) {
	m := &MicrosandboxConfig{}
	var err error
	for _, f := range []struct {
		key string
		dst *string
	}{
		{"helper_path", &m.HelperPath}, {"runtime_path", &m.RuntimePath}, {"firmware_path", &m.FirmwarePath},
		{"runtime_sha256", &m.RuntimeSHA256}, {"firmware_sha256", &m.FirmwareSHA256},
		{"runtime_home", &m.RuntimeHome}, {"image", &m.Image},
	} {
		if *f.dst, err = o.str(f.key); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct {
		key string
		dst *int64
	}{{"cpus", &m.CPUs}, {"memory_mib", &m.MemoryMiB}, {"root_disk_mib", &m.RootDiskMiB}, {"environment_disk_mib", &m.EnvironmentDiskMiB}} {
		if *f.dst, err = o.integer(f.key, 0, release.MaxDiskMiB); err != nil {
			return nil, err
		}
	}
	no, err := o.object("network")
	if err != nil {
		return nil, err
	}
	if m.Network, err = parseNetwork(no); err != nil {
		return nil, err
	}
	return m, o.done()
}

func parseNetwork(o *members) (Network, error) {
	var n Network
	var err error
	if n.DefaultEgress, err = o.str("default_egress"); err != nil {
		return n, err
	}
	if n.DefaultIngress, err = o.str("default_ingress"); err != nil {
		return n, err
	}
	rules, err := o.array("rules")
	if err != nil {
		return n, err
	}
	for i, raw := range rules {
		path := o.path + ".rules[" + strconv.Itoa(i) + "]"
		ro, err := decodeObject(path, raw)
		if err != nil {
			return n, err
		}
		var r Rule
		if r.Action, err = ro.str("action"); err != nil {
			return n, err
		}
		if r.Direction, err = ro.str("direction"); err != nil {
			return n, err
		}
		if r.Destination, err = ro.str("destination"); err != nil {
			return n, err
		}
		for _, opt := range []struct {
			key string
			dst *string
		}{{"protocol", &r.Protocol}, {"port", &r.Port}} {
			if ro.has(opt.key) {
				if *opt.dst, err = ro.str(opt.key); err != nil {
					return n, err
				}
				if *opt.dst == "" {
					return n, fieldErr(path+"."+opt.key, "is empty (omit the key instead)")
				}
			}
		}
		if err := ro.done(); err != nil {
			return n, err
		}
		n.Rules = append(n.Rules, r)
	}
	return n, o.done()
}

// IsMalformed reports whether err says a configuration could not be read
// (as opposed to a configuration that reads but does not fit its node).
func IsMalformed(err error) bool { return errors.Is(err, ErrMalformed) }
