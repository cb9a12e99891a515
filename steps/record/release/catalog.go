package release

import "slices"

// Role says what an artifact is for on a node.
type Role string

// Artifact roles of the provider catalog (CONTRACT §1.2).
const (
	RoleNode    Role = "node"    // the oac-node program
	RoleImage   Role = "image"   // the Runtime image archive
	RolePolicy  Role = "policy"  // the seccomp profile, verified through SHA256SUMS
	RoleRuntime Role = "runtime" // microsandbox helper, msb and firmware
)

// Provider names of the catalog.
const (
	ProviderDocker       = "docker"
	ProviderMicrosandbox = "microsandbox"
)

// ArtifactSpec is one catalog entry: the logical path a node installs the
// artifact at, the suffix of its released file name, and its role.
type ArtifactSpec struct {
	Path   string
	Suffix string
	Role   Role
}

// Logical paths with a meaning of their own.
const (
	PathNode          = "native/bin/oac-node"
	PathRuntimeImage  = "images/runtime.tar.gz"
	PathSeccomp       = "runtime/seccomp.json"
	PathMicroHelper   = "native/bin/oac-microsandbox-provider"
	PathMicroRuntime  = "native/microsandbox/msb"
	PathMicroFirmware = "native/microsandbox/libkrunfw.so.5.6.1"
)

var dockerCatalog = []ArtifactSpec{
	{Path: PathNode, Suffix: "sandbox-node", Role: RoleNode},
	{Path: PathRuntimeImage, Suffix: "runtime.tar.gz", Role: RoleImage},
	{Path: PathSeccomp, Suffix: "seccomp.json", Role: RolePolicy},
}

// microsandboxCatalog keeps the runtime-role paths in the installer's MICRO
// order: helper, runtime (msb), firmware.
var microsandboxCatalog = append(slices.Clone(dockerCatalog),
	ArtifactSpec{Path: PathMicroHelper, Suffix: "microsandbox-provider", Role: RoleRuntime},
	ArtifactSpec{Path: PathMicroRuntime, Suffix: "msb", Role: RoleRuntime},
	ArtifactSpec{Path: PathMicroFirmware, Suffix: "libkrunfw.so.5.6.1", Role: RoleRuntime},
)

// Providers returns the provider names of the catalog, sorted.
func Providers() []string { return []string{ProviderDocker, ProviderMicrosandbox} }

// Catalog returns the artifacts a node of provider needs, in catalog order,
// or nil for a provider outside the catalog. The slice is a copy.
func Catalog(provider string) []ArtifactSpec {
	switch provider {
	case ProviderDocker:
		return slices.Clone(dockerCatalog)
	case ProviderMicrosandbox:
		return slices.Clone(microsandboxCatalog)
	}
	return nil
}

// InCatalog reports whether logical path is an artifact of any provider.
func InCatalog(path string) bool {
	for _, p := range Providers() {
		for _, a := range Catalog(p) {
			if a.Path == path {
				return true
			}
		}
	}
	return false
}

// FileName is the released file name of the artifact with suffix in the
// release sourceCommit: oac-<source_commit>-linux-amd64-<suffix>.
func FileName(sourceCommit, suffix string) string {
	return "oac-" + sourceCommit + "-linux-amd64-" + suffix
}
