package release

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
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
	CPUs               int64 `json:"cpus"`
	MemoryMiB          int64 `json:"memory_mib"`
	RootDiskMiB        int64 `json:"root_disk_mib,omitempty"`
	EnvironmentDiskMiB int64 `json:"environment_disk_mib,omitempty"`
}

// Runtime pins the Runtime release and its identities.
type Runtime struct {
	SourceCommit        string `json:"source_commit"`
	ImageID             string `json:"image_id"`              // Docker config digest
	ImageManifestDigest string `json:"image_manifest_digest"` // OCI manifest or index digest
	MicrosandboxRef     string `json:"microsandbox_ref"`      // oac-runtime@sha256:<64hex>
	RuntimeSHA256       string `json:"runtime_sha256"`        // msb
	FirmwareSHA256      string `json:"firmware_sha256"`       // libkrunfw
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
	var doc specificationDoc
	if err := specificationFormat.Decode(raw, &doc); err != nil {
		return nil, fromStrict(err, ErrInvalidSpecification, "specification")
	}
	s := &Specification{Provider: provider, Resources: doc.Resources}
	if err := checkResources(s.Resources, kind.disk); err != nil {
		return nil, err
	}
	switch {
	case kind.runtime && doc.Runtime == nil:
		return nil, specErr("runtime", "missing (provider %s runs a Runtime)", provider)
	case !kind.runtime && doc.Runtime != nil:
		return nil, specErr("runtime", "not allowed for provider %s", provider)
	case doc.Runtime != nil:
		for _, f := range runtimeFields {
			if !f.check(*f.get(doc.Runtime)) {
				return nil, specErr("runtime."+f.key, "must be %s", f.rule)
			}
		}
		s.Runtime = doc.Runtime
	}
	return s, nil
}

// specificationDoc is the specification object as Core sends it.
type specificationDoc struct {
	Resources Resources `json:"resources"`
	Runtime   *Runtime  `json:"runtime,omitempty"`
}

// The specification is strict: its digest covers exactly these keys. It
// travels inside a configuration, so the configuration's bound applies.
var specificationFormat = strictjson.Format{MaxSize: MaxMetadataSize}

func checkResources(r Resources, disk bool) error {
	for _, f := range []struct {
		key      string
		v        int64
		min, max int64
	}{
		{"cpus", r.CPUs, MinCPUs, MaxCPUs},
		{"memory_mib", r.MemoryMiB, MinMemoryMiB, MaxMemoryMiB},
		{"root_disk_mib", r.RootDiskMiB, 0, MaxDiskMiB},
		{"environment_disk_mib", r.EnvironmentDiskMiB, 0, MaxDiskMiB},
	} {
		if f.v < f.min || f.v > f.max {
			return specErr("resources."+f.key, "%d is outside [%d, %d]", f.v, f.min, f.max)
		}
	}
	for _, d := range []struct {
		key string
		v   int64
	}{{"root_disk_mib", r.RootDiskMiB}, {"environment_disk_mib", r.EnvironmentDiskMiB}} {
		switch {
		case d.v != 0 && !disk:
			return specErr("resources."+d.key, "must be 0 or absent: this provider has no disks")
		case d.v != 0 && d.v < MinDiskMiB:
			return specErr("resources."+d.key, "%d is below %d", d.v, MinDiskMiB)
		}
	}
	return nil
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
