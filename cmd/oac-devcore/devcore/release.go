package devcore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/record/release/releasetest"
)

// MaxInstallerSize is the largest installer binary the generated command
// accepts (CONTRACT §9).
const MaxInstallerSize = 64 << 20

// MicrosandboxVersion is the microsandbox version fixture releases name.
const MicrosandboxVersion = "0.7.2"

// FixtureOptions choose the inputs of a fixture release.
type FixtureOptions struct {
	// Installer is the installer binary to publish as oac-node-install;
	// "" publishes a placeholder script (Fixture.PlaceholderInstaller).
	Installer string
	// NodeProgram is the node program to publish as native/bin/oac-node;
	// "" publishes a placeholder script that exits 1.
	NodeProgram string
	// NodeProgramSize pads the placeholder node program with deterministic
	// incompressible bytes to this size, for transfer benchmarks.
	NodeProgramSize int64
	// ImagePayloadSize is the size of the Runtime image's payload layer
	// (imagetest.Options.PayloadSize).
	ImagePayloadSize int64
	// ImagePayloadLayers splits the payload over this many layers
	// (imagetest.Options.PayloadLayers); 0 or 1 keeps one.
	ImagePayloadLayers int
	// ImageAttestation builds the Runtime archive as docker save of the
	// containerd image store writes it for a buildx-built image with its
	// default attestation (imagetest.Options.Attestation): the
	// manifest's image_manifest_digests.runtime is then an image index
	// digest.
	ImageAttestation bool
	// Label makes a release's Runtime image distinct (a later generation's
	// release, another console's); "" is "oac-devcore". Start labels the
	// first release with its installation (RunLabel).
	Label string
	// ReleaseHost is the host:port of a release host that holds the image
	// archive instead of the console; "" makes an offline release whose
	// artifacts the console holds.
	ReleaseHost string
}

// Fixture is a built release, ready for console.Publish.
type Fixture struct {
	SourceCommit string
	Manifest     *release.Manifest
	// Files is what the console publishes: the fixed files, and every
	// artifact except those in Remote.
	Files console.ReleaseFiles
	// Remote maps the file names of artifacts only the release host holds
	// to their local files.
	Remote map[string]string
	// Image describes the Runtime image archive (runtime.tar and
	// runtime.tar.gz in the build directory).
	Image imagetest.Fixture
	// PlaceholderInstaller is true when no installer binary was given.
	PlaceholderInstaller bool
}

// seccompProfile is a small valid Docker seccomp profile: allow by default,
// refuse loading another kernel.
const seccompProfile = `{
  "defaultAction": "SCMP_ACT_ALLOW",
  "architectures": ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"],
  "syscalls": [
    {"names": ["kexec_file_load", "kexec_load"], "action": "SCMP_ACT_ERRNO"}
  ]
}
`

const placeholderInstaller = "#!/bin/sh\necho 'oac-devcore: placeholder installer; start oac-devcore with --installer' >&2\nexit 1\n"

const placeholderNode = "#!/bin/sh\n# oac-devcore placeholder node program\necho 'oac-devcore: placeholder node program' >&2\nexit 1\n"

// BuildFixture writes the fixture's files into buildDir (created 0700) and
// describes them as a release. Equal options and inputs give the same
// release, byte for byte.
func BuildFixture(buildDir string, opts FixtureOptions) (*Fixture, error) {
	if err := os.MkdirAll(buildDir, 0o700); err != nil {
		return nil, fmt.Errorf("build fixture release: %w", err)
	}
	fx := &Fixture{Remote: map[string]string{}}
	label := opts.Label
	if label == "" {
		label = "oac-devcore"
	}
	img, err := imagetest.WriteFixture(buildDir, imagetest.Options{Label: label, PayloadSize: opts.ImagePayloadSize, PayloadLayers: opts.ImagePayloadLayers, Attestation: opts.ImageAttestation})
	if err != nil {
		return nil, fmt.Errorf("build fixture release: %w", err)
	}
	fx.Image = img

	node := opts.NodeProgram
	if node == "" {
		node = filepath.Join(buildDir, "oac-node")
		if err := writePlaceholder(node, placeholderNode, opts.NodeProgramSize); err != nil {
			return nil, fmt.Errorf("build fixture release: %w", err)
		}
	}
	sources := map[string]string{ // logical path -> local file
		release.PathNode:         node,
		release.PathRuntimeImage: img.GzPath,
	}
	for _, p := range []struct{ path, name string }{
		{release.PathMicroHelper, "oac-microsandbox-provider"},
		{release.PathMicroRuntime, "msb"},
		{release.PathMicroFirmware, "libkrunfw.so.5.6.1"},
	} {
		f := filepath.Join(buildDir, p.name)
		if err := writePlaceholder(f, "oac-devcore placeholder "+p.name+"\n", 0); err != nil {
			return nil, fmt.Errorf("build fixture release: %w", err)
		}
		sources[p.path] = f
	}

	installer := []byte(placeholderInstaller)
	if opts.Installer != "" {
		if installer, err = readLimited(opts.Installer, MaxInstallerSize); err != nil {
			return nil, fmt.Errorf("build fixture release: installer: %w", err)
		}
	} else {
		fx.PlaceholderInstaller = true
	}
	seccomp := []byte(seccompProfile)

	// The source commit is derived from everything the release holds.
	type sum struct {
		size int64
		hex  string
	}
	sums := map[string]sum{}
	fp := sha256.New()
	fmt.Fprintf(fp, "oac-devcore fixture 1\nrelease-host %s\n", opts.ReleaseHost)
	for _, path := range slices.Sorted(maps.Keys(sources)) {
		n, h, err := hashFile(sources[path])
		if err != nil {
			return nil, fmt.Errorf("build fixture release: %w", err)
		}
		sums[path] = sum{n, h}
		fmt.Fprintf(fp, "%s %d %s\n", path, n, h)
	}
	fmt.Fprintf(fp, "seccomp %s\ninstaller %s\n", release.SHA256Hex(seccomp), release.SHA256Hex(installer))
	digest := hex.EncodeToString(fp.Sum(nil))
	commit := digest[:40]
	tree := digest[24:64]
	fx.SourceCommit = commit

	m := &release.Manifest{
		Artifacts:            map[string]release.Artifact{},
		Images:               map[string]string{release.ImageRuntime: img.ConfigDigest},
		ImageManifestDigests: map[string]string{release.ImageRuntime: img.ManifestDigest},
		Microsandbox: release.Microsandbox{
			Version:        MicrosandboxVersion,
			RuntimeSHA256:  sums[release.PathMicroRuntime].hex,
			FirmwareSHA256: sums[release.PathMicroFirmware].hex,
		},
		Platform:     release.Platform,
		RuntimeRef:   "oac-runtime@" + img.ManifestDigest,
		SourceCommit: commit,
		SourceTree:   tree,
	}
	if opts.ReleaseHost != "" {
		m.ArtifactBaseURL = releaseHostBase(opts.ReleaseHost, commit)
	}
	fx.Files.Artifacts = map[string]string{}
	for _, spec := range release.Catalog(release.ProviderMicrosandbox) {
		src, ok := sources[spec.Path]
		if !ok {
			continue
		}
		a := release.Artifact{Filename: release.FileName(commit, spec.Suffix), SHA256: sums[spec.Path].hex, Size: sums[spec.Path].size}
		if spec.Path == release.PathRuntimeImage {
			a.UnpackedSHA256, a.UnpackedSize = img.TarSHA256, img.TarSize
		}
		m.Artifacts[spec.Path] = a
		if spec.Path == release.PathRuntimeImage && opts.ReleaseHost != "" {
			fx.Remote[a.Filename] = src
		} else {
			fx.Files.Artifacts[a.Filename] = src
		}
	}
	files, err := releasetest.Files(m, seccomp, installer)
	if err != nil {
		return nil, fmt.Errorf("build fixture release: %w", err)
	}
	if fx.Manifest, err = release.ParseManifest(files[release.ManifestName]); err != nil {
		return nil, fmt.Errorf("build fixture release: %w", err)
	}
	fx.Files.Files = files
	return fx, nil
}

// Specification returns a deployment specification for provider that runs
// this release with the smallest resources.
func (fx *Fixture) Specification(provider string) (*release.Specification, error) {
	rt := release.RuntimeOf(fx.Manifest)
	s := &release.Specification{
		Provider:  provider,
		Resources: release.Resources{CPUs: release.MinCPUs, MemoryMiB: release.MinMemoryMiB},
		Runtime:   &rt,
	}
	obj, _ := s.MarshalJSON()
	return release.ParseSpecification(provider, obj)
}

// releaseHostBase is the versioned release directory on the release host.
func releaseHostBase(host, commit string) string {
	return "https://" + host + releaseHostPrefix + "build-" + commit
}

// writePlaceholder writes head followed by deterministic pseudo-random
// bytes up to size (no padding when size <= len(head)) to path, unless
// path already holds a file of that size written this way (the content
// is a function of head and size).
func writePlaceholder(path, head string, size int64) error {
	size = max(size, int64(len(head)))
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() && st.Size() == size {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		got := make([]byte, len(head))
		_, err = io.ReadFull(f, got)
		f.Close()
		if err == nil && string(got) == head {
			return nil
		}
	}
	root, err := safefile.OpenRootTrusted(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer root.Close()
	tmp, err := root.OpenPending("."+filepath.Base(path)+".tmp", "devcore")
	if err != nil {
		return err
	}
	var seed [32]byte
	copy(seed[:], head)
	pad := io.LimitReader(rand.NewChaCha8(seed), size-int64(len(head)))
	if err := tmp.File().Truncate(0); err != nil {
		tmp.Discard()
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = io.CopyBuffer(tmp.File(), io.MultiReader(strings.NewReader(head), pad), make([]byte, 1<<20))
	if err == nil {
		err = tmp.CommitReplace(filepath.Base(path), 0o700)
	}
	if err != nil {
		tmp.Discard()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func hashFile(path string) (int64, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.CopyBuffer(h, f, make([]byte, 1<<20))
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", path, err)
	}
	return n, hex.EncodeToString(h.Sum(nil)), nil
}

func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}
