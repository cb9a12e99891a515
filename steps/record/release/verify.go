package release

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Fixed names of a console release (CONTRACT §1.3, §2.1 and §9). The
// installer binary is served as InstallerName and listed in SHA256SUMS. The
// Python installer's name LegacyInstallerName is still accepted as an
// optional extra file so a console can carry both during a migration.
const (
	ManifestName        = "manifest.json"
	InstallerName       = "oac-node-install"
	LegacyInstallerName = "node-install.pyz"
	SeccompName         = PathSeccomp
)

// FixedNames returns the file names a console serves from a release
// directory besides artifacts, in a stable order.
func FixedNames() []string {
	return []string{InstallerName, LegacyInstallerName, ManifestName, SumsName, SeccompName}
}

// IsFixedName reports whether name is one of FixedNames.
func IsFixedName(name string) bool {
	for _, n := range FixedNames() {
		if n == name {
			return true
		}
	}
	return false
}

// Release is verified release metadata for one provider.
type Release struct {
	Manifest *Manifest
	Sums     Sums
	Provider string
	// SeccompSHA256 is the SHA256SUMS checksum runtime/seccomp.json must have.
	SeccompSHA256 string
}

// ResolvedArtifact is a catalog entry with the manifest's entry for it.
type ResolvedArtifact struct {
	ArtifactSpec
	Artifact
}

// Artifacts returns the provider's catalog artifacts declared by the
// manifest, in catalog order, without the policy role (which comes from
// SHA256SUMS, see SeccompSHA256).
func (r *Release) Artifacts() []ResolvedArtifact {
	var out []ResolvedArtifact
	for _, spec := range Catalog(r.Provider) {
		if spec.Role == RolePolicy {
			continue
		}
		out = append(out, ResolvedArtifact{ArtifactSpec: spec, Artifact: r.Manifest.Artifacts[spec.Path]})
	}
	return out
}

// VerifyRelease checks downloaded metadata of a release for provider:
// manifest.json is valid and listed in SHA256SUMS with its exact sha256,
// and runtime/seccomp.json is listed. Failures wrap ErrUnknownProvider,
// ErrTooLarge, ErrInvalidManifest, ErrInvalidSums, ErrNotListed or
// ErrChecksumMismatch.
func VerifyRelease(manifestBytes, sumsBytes []byte, provider string) (*Release, error) {
	if Catalog(provider) == nil {
		return nil, fmt.Errorf("verify release: %w %q", ErrUnknownProvider, provider)
	}
	sums, err := ParseSHA256SUMS(sumsBytes)
	if err != nil {
		return nil, fmt.Errorf("verify release: %w", err)
	}
	want, ok := sums[ManifestName]
	if !ok {
		return nil, fmt.Errorf("verify release: %s: %w", ManifestName, ErrNotListed)
	}
	if len(manifestBytes) > MaxMetadataSize {
		return nil, fmt.Errorf("verify release: %s: %w (%d bytes)", ManifestName, ErrTooLarge, len(manifestBytes))
	}
	if got := SHA256Hex(manifestBytes); got != want {
		return nil, fmt.Errorf("verify release: %s has sha256 %s, %s lists %s: %w", ManifestName, got, SumsName, want, ErrChecksumMismatch)
	}
	seccomp, ok := sums[SeccompName]
	if !ok {
		return nil, fmt.Errorf("verify release: %s: %w", SeccompName, ErrNotListed)
	}
	m, err := ParseManifest(manifestBytes)
	if err != nil {
		return nil, fmt.Errorf("verify release: %w", err)
	}
	return &Release{Manifest: m, Sums: sums, Provider: provider, SeccompSHA256: seccomp}, nil
}

// SHA256Hex returns the sha256 of data in lowercase hex.
func SHA256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}
