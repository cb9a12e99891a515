package releasetest

import (
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// MicrosandboxManifest returns the manifest of a microsandbox release of
// commit whose every catalog artifact but the policies is art(spec), and
// whose image digests and source tree are made up. Its microsandbox
// version is 0.7.2 and its runtime and firmware digests are their
// artifacts'.
func MicrosandboxManifest(commit string, art func(release.ArtifactSpec) release.Artifact) *release.Manifest {
	m := &release.Manifest{
		Artifacts:            map[string]release.Artifact{},
		Images:               map[string]string{release.ImageRuntime: "sha256:" + strings.Repeat("1", 64)},
		ImageManifestDigests: map[string]string{release.ImageRuntime: "sha256:" + strings.Repeat("2", 64)},
		Platform:             release.Platform,
		RuntimeRef:           "oac-runtime@sha256:" + strings.Repeat("2", 64),
		SourceCommit:         commit,
		SourceTree:           strings.Repeat("3", 40),
	}
	for _, spec := range release.Catalog(release.ProviderMicrosandbox) {
		if spec.Role == release.RolePolicy {
			continue
		}
		m.Artifacts[spec.Path] = art(spec)
	}
	m.Microsandbox = release.Microsandbox{
		Version:        "0.7.2",
		RuntimeSHA256:  m.Artifacts[release.PathMicroRuntime].SHA256,
		FirmwareSHA256: m.Artifacts[release.PathMicroFirmware].SHA256,
	}
	return m
}

// Files returns the fixed files that offer m: its marshalled manifest,
// seccomp, installer (unless nil) and the SHA256SUMS listing them.
func Files(m *release.Manifest, seccomp, installer []byte) (map[string][]byte, error) {
	mb, err := m.Marshal()
	if err != nil {
		return nil, err
	}
	sums := release.Sums{
		release.ManifestName: release.SHA256Hex(mb),
		release.SeccompName:  release.SHA256Hex(seccomp),
	}
	files := map[string][]byte{release.ManifestName: mb, release.SeccompName: seccomp}
	if installer != nil {
		sums[release.InstallerName] = release.SHA256Hex(installer)
		files[release.InstallerName] = installer
	}
	if files[release.SumsName], err = sums.Marshal(); err != nil {
		return nil, err
	}
	return files, nil
}
