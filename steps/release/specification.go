package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// ProviderE2B is the remote provider; it has neither a Runtime nor disks.
const ProviderE2B = "e2b"

// Resource limits of a specification (CONTRACT §8).
const (
	MinCPUs      = 1
	MaxCPUs      = 255
	MinMemoryMiB = 512
	MaxMemoryMiB = 1048576
	MinDiskMiB   = 1024 // a disk, when a provider has disks and it is not zero
	MaxDiskMiB   = 4294967295
)

// specProviders says, per provider, whether it has a Runtime and disks.
var specProviders = map[string]struct{ runtime, disk bool }{
	ProviderDocker:       {runtime: true, disk: false},
	ProviderE2B:          {runtime: false, disk: false},
	ProviderMicrosandbox: {runtime: true, disk: true},
}

// Specification is a validated deployment specification: what Core asks
// the nodes of a provider to run.
type Specification struct {
	Provider  string
	Resources Resources
	// Runtime is nil for a provider without a Runtime (e2b).
	Runtime *Runtime
}

// Resources of one sandbox. Disks are zero for providers without disks
// and, being zero, are omitted from the canonical form.
type Resources struct {
	CPUs               int64
	MemoryMiB          int64
	RootDiskMiB        int64
	EnvironmentDiskMiB int64
}

// Runtime pins the Runtime release and its identities.
type Runtime struct {
	SourceCommit        string
	ImageID             string // Docker config digest
	ImageManifestDigest string // OCI manifest or index digest
	MicrosandboxRef     string // oac-runtime@sha256:<64hex>
	RuntimeSHA256       string // msb
	FirmwareSHA256      string // libkrunfw
}

// ParseSpecification validates the specification object Core sends
// ({"resources": …, "runtime": …}) for provider. Unknown keys, booleans or
// non-integers where integers belong, out-of-range values, disks for a
// provider without disks, and a missing (or, for e2b, present) runtime are
// refused with a *FieldError of kind ErrInvalidSpecification; a provider
// outside docker, e2b and microsandbox with ErrUnknownProvider.
func ParseSpecification(provider string, raw json.RawMessage) (*Specification, error) {
	kind, ok := specProviders[provider]
	if !ok {
		return nil, fmt.Errorf("specification: %w %q", ErrUnknownProvider, provider)
	}
	if !utf8.Valid(raw) {
		return nil, specErr("specification", "not valid UTF-8")
	}
	top, err := object(raw)
	if err != nil {
		return nil, specErr("specification", "%v", err)
	}
	if err := onlyKeys("", top, "resources", "runtime"); err != nil {
		return nil, err
	}
	s := &Specification{Provider: provider}
	rawRes, ok := top["resources"]
	if !ok {
		return nil, specErr("resources", "missing")
	}
	if s.Resources, err = parseResources(rawRes, kind.disk); err != nil {
		return nil, err
	}
	rawRT, hasRT := top["runtime"]
	switch {
	case kind.runtime && !hasRT:
		return nil, specErr("runtime", "missing (provider %s runs a Runtime)", provider)
	case !kind.runtime && hasRT:
		return nil, specErr("runtime", "not allowed for provider %s", provider)
	case hasRT:
		if s.Runtime, err = parseRuntime(rawRT); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func onlyKeys(prefix string, m map[string]json.RawMessage, allowed ...string) error {
	for _, k := range sortedKeys(m) {
		known := false
		for _, a := range allowed {
			known = known || k == a
		}
		if !known {
			return specErr(prefix+k, "unknown key")
		}
	}
	return nil
}

func parseResources(raw json.RawMessage, disk bool) (Resources, error) {
	var r Resources
	m, err := object(raw)
	if err != nil {
		return r, specErr("resources", "%v", err)
	}
	if err := onlyKeys("resources.", m, "cpus", "memory_mib", "root_disk_mib", "environment_disk_mib"); err != nil {
		return r, err
	}
	for _, f := range []struct {
		key      string
		dst      *int64
		min, max int64
		required bool
	}{
		{"cpus", &r.CPUs, MinCPUs, MaxCPUs, true},
		{"memory_mib", &r.MemoryMiB, MinMemoryMiB, MaxMemoryMiB, true},
		{"root_disk_mib", &r.RootDiskMiB, 0, MaxDiskMiB, false},
		{"environment_disk_mib", &r.EnvironmentDiskMiB, 0, MaxDiskMiB, false},
	} {
		v, ok := m[f.key]
		if !ok {
			if f.required {
				return r, specErr("resources."+f.key, "missing")
			}
			continue
		}
		n, err := integer(v, f.min, f.max)
		if err != nil {
			return r, specErr("resources."+f.key, "%v", err)
		}
		*f.dst = n
	}
	for _, d := range []struct {
		key string
		v   int64
	}{{"root_disk_mib", r.RootDiskMiB}, {"environment_disk_mib", r.EnvironmentDiskMiB}} {
		switch {
		case d.v != 0 && !disk:
			return r, specErr("resources."+d.key, "must be 0 or absent: this provider has no disks")
		case d.v != 0 && d.v < MinDiskMiB:
			return r, specErr("resources."+d.key, "%d is below %d", d.v, MinDiskMiB)
		}
	}
	return r, nil
}

// runtimeFields lists the runtime keys in canonical order with their rules.
var runtimeFields = []struct {
	key   string
	get   func(*Runtime) *string
	check func(string) bool
	rule  string
}{
	{"source_commit", func(r *Runtime) *string { return &r.SourceCommit }, IsCommit, "40 lowercase hex digits"},
	{"image_id", func(r *Runtime) *string { return &r.ImageID }, IsDigest, "sha256:<64 lowercase hex>"},
	{"image_manifest_digest", func(r *Runtime) *string { return &r.ImageManifestDigest }, IsDigest, "sha256:<64 lowercase hex>"},
	{"microsandbox_ref", func(r *Runtime) *string { return &r.MicrosandboxRef }, IsRuntimeRef, "oac-runtime@sha256:<64 lowercase hex>"},
	{"runtime_sha256", func(r *Runtime) *string { return &r.RuntimeSHA256 }, IsSHA256, "64 lowercase hex digits"},
	{"firmware_sha256", func(r *Runtime) *string { return &r.FirmwareSHA256 }, IsSHA256, "64 lowercase hex digits"},
}

func parseRuntime(raw json.RawMessage) (*Runtime, error) {
	m, err := object(raw)
	if err != nil {
		return nil, specErr("runtime", "%v", err)
	}
	keys := make([]string, len(runtimeFields))
	for i, f := range runtimeFields {
		keys[i] = f.key
	}
	if err := onlyKeys("runtime.", m, keys...); err != nil {
		return nil, err
	}
	rt := &Runtime{}
	for _, f := range runtimeFields {
		v, ok := m[f.key]
		if !ok {
			return nil, specErr("runtime."+f.key, "missing")
		}
		s, err := str(v)
		if err != nil {
			return nil, specErr("runtime."+f.key, "%v", err)
		}
		if !f.check(s) {
			return nil, specErr("runtime."+f.key, "must be %s", f.rule)
		}
		*f.get(rt) = s
	}
	return rt, nil
}

// Canonical returns the canonical serialisation the specification digest is
// computed over: {"provider":…,"resources":{…},"runtime":{…}} with keys in
// contract order, zero disks omitted, no runtime for e2b, separators "," and
// ":" and no ASCII escaping. Every value is validated to a plain ASCII
// alphabet, so no string needs escaping.
func (s *Specification) Canonical() []byte {
	var b bytes.Buffer
	b.WriteString(`{"provider":`)
	b.WriteString(strconv.Quote(s.Provider))
	b.WriteString(`,`)
	s.writeBody(&b)
	b.WriteString(`}`)
	return b.Bytes()
}

// writeBody writes `"resources":{…}[,"runtime":{…}]`.
func (s *Specification) writeBody(b *bytes.Buffer) {
	r := s.Resources
	fmt.Fprintf(b, `"resources":{"cpus":%d,"memory_mib":%d`, r.CPUs, r.MemoryMiB)
	if r.RootDiskMiB != 0 {
		fmt.Fprintf(b, `,"root_disk_mib":%d`, r.RootDiskMiB)
	}
	if r.EnvironmentDiskMiB != 0 {
		fmt.Fprintf(b, `,"environment_disk_mib":%d`, r.EnvironmentDiskMiB)
	}
	b.WriteString(`}`)
	if s.Runtime != nil {
		b.WriteString(`,"runtime":{`)
		for i, f := range runtimeFields {
			if i > 0 {
				b.WriteString(`,`)
			}
			fmt.Fprintf(b, `%q:%q`, f.key, *f.get(s.Runtime))
		}
		b.WriteString(`}`)
	}
}

// Digest returns the specification digest: the lowercase hex sha256 of
// Canonical.
func (s *Specification) Digest() string {
	sum := sha256.Sum256(s.Canonical())
	return hex.EncodeToString(sum[:])
}

// MarshalJSON writes the specification object as Core sends it (without
// the provider), in canonical order, so ParseSpecification reads it back.
func (s *Specification) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{`)
	s.writeBody(&b)
	b.WriteString(`}`)
	return b.Bytes(), nil
}

// RuntimeOf returns the runtime a specification must name to run the
// release described by m.
func RuntimeOf(m *Manifest) Runtime {
	return Runtime{
		SourceCommit:        m.SourceCommit,
		ImageID:             m.Images[ImageRuntime],
		ImageManifestDigest: m.ImageManifestDigests[ImageRuntime],
		MicrosandboxRef:     m.RuntimeRef,
		RuntimeSHA256:       m.Microsandbox.RuntimeSHA256,
		FirmwareSHA256:      m.Microsandbox.FirmwareSHA256,
	}
}

// MatchRelease checks that spec's runtime equals the release m: source
// commit, both image identities, the microsandbox reference and the runtime
// and firmware digests. A mismatch wraps ErrReleaseMismatch and names the
// first differing field.
func MatchRelease(spec *Specification, m *Manifest) error {
	if spec.Runtime == nil {
		return fmt.Errorf("specification for %s has no runtime: %w", spec.Provider, ErrReleaseMismatch)
	}
	want := RuntimeOf(m)
	for _, f := range runtimeFields {
		if got, exp := *f.get(spec.Runtime), *f.get(&want); got != exp {
			return fmt.Errorf("runtime.%s is %s, release %s has %s: %w", f.key, got, m.SourceCommit, exp, ErrReleaseMismatch)
		}
	}
	return nil
}
