package generationtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/image"
	"github.com/openagentcore/oac-node-install/steps/record/image/imagetest"
	"github.com/openagentcore/oac-node-install/steps/record/launcher"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/record/release/releasetest"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// Identities of the test node.
const (
	InstallationID = "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a"
	NodeID         = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
	Credential     = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	CommitA        = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"
	CommitB        = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2"
)

// PathUnpacked is the unpacked Runtime archive's path in a release
// directory.
const PathUnpacked = "images/runtime.tar"

// FakeMSBScript is the msb artifact of the fixture releases: a fake msb
// keeping one file per loaded image in $MSB_HOME/.fake. A file
// $MSB_HOME/.fake/fail-<what> (list, inspect, load, remove, sandboxes)
// makes that query fail; $MSB_HOME/.fake/sandboxes is printed verbatim by
// sandbox list when present.
const FakeMSBScript = `#!/bin/sh
S="$MSB_HOME/.fake"
mkdir -p "$S" || exit 9
fail() { if [ -f "$S/fail-$1" ]; then echo "msb: $1 failed" >&2; exit 1; fi; }
case "$1 $2" in
"image inspect") fail inspect; [ -f "$S/$3" ] || exit 1
	printf '{"digest":"%s","architecture":"amd64","os":"linux"}\n' "${3#*@}";;
"image load") fail load; : > "$S/$6";;
"image list") fail list; for f in "$S"/*@sha256:*; do [ -e "$f" ] && echo "${f##*/}"; done; true;;
"image remove") fail remove; rm -f "$S/$3";;
"sandbox list") fail sandboxes; if [ -f "$S/sandboxes" ]; then cat "$S/sandboxes"; else echo '[]'; fi;;
*) exit 2;;
esac
`

// Release is a fixture release: its files as the console publishes them
// and what a specification running it says.
type Release struct {
	Commit    string
	Manifest  *release.Manifest
	Files     map[string][]byte // manifest.json, SHA256SUMS, runtime/seccomp.json
	Artifacts map[string]string // released file name -> local path
	Bytes     map[string][]byte // catalog path (and PathUnpacked) -> bytes
	Image     image.Identity
}

var (
	releaseMu    sync.Mutex
	releaseCache = map[string]*Release{}
	releaseDirs  []string
)

// Cleanup removes the files of every release BuildRelease built. A test
// binary that uses the package calls it from TestMain after m.Run.
func Cleanup() {
	releaseMu.Lock()
	defer releaseMu.Unlock()
	for _, d := range releaseDirs {
		os.RemoveAll(d)
	}
	releaseDirs = nil
	releaseCache = map[string]*Release{}
}

// BuildRelease builds, once per test binary and commit, a release with a
// real fixture Runtime image, a seccomp profile and the fake msb. Its
// files live in a temporary directory that stays until Cleanup.
func BuildRelease(t testing.TB, commit string) *Release {
	t.Helper()
	releaseMu.Lock()
	defer releaseMu.Unlock()
	if r, ok := releaseCache[commit]; ok {
		return r
	}
	r, dir := buildRelease(t, commit, imagetest.Options{Label: "runtime-" + commit})
	releaseCache[commit] = r
	releaseDirs = append(releaseDirs, dir)
	return r
}

// BuildAttestedRelease is BuildRelease with a Runtime archive as docker save
// of the containerd image store writes it for a buildx-built image with its
// default attestation (imagetest.Options.Attestation): the release's
// image_manifest_digests.runtime is the image index digest.
func BuildAttestedRelease(t testing.TB, commit string) *Release {
	t.Helper()
	releaseMu.Lock()
	defer releaseMu.Unlock()
	key := commit + " attested"
	if r, ok := releaseCache[key]; ok {
		return r
	}
	r, dir := buildRelease(t, commit, imagetest.Options{Label: "runtime-" + commit, Attestation: true})
	releaseCache[key] = r
	releaseDirs = append(releaseDirs, dir)
	return r
}

// BuildSizedRelease is BuildRelease with a Runtime image of payload bytes
// over layers layers (imagetest.Options.PayloadSize and PayloadLayers),
// for tests that act while an engine is in the middle of its import. It
// is built once per test binary, commit and size.
func BuildSizedRelease(t testing.TB, commit string, payload int64, layers int) *Release {
	t.Helper()
	releaseMu.Lock()
	defer releaseMu.Unlock()
	key := commit + " payload " + strconv.FormatInt(payload, 10) + "/" + strconv.Itoa(layers)
	if r, ok := releaseCache[key]; ok {
		return r
	}
	r, dir := buildRelease(t, commit, imagetest.Options{Label: "runtime-" + commit, PayloadSize: payload, PayloadLayers: layers})
	releaseCache[key] = r
	releaseDirs = append(releaseDirs, dir)
	return r
}

// BuildUniqueRelease builds a release with a random source commit and an
// image no other test builds, for tests against a real engine. Its files
// are removed when the test ends.
func BuildUniqueRelease(t testing.TB) *Release {
	t.Helper()
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	commit := hex.EncodeToString(b[:])
	r, dir := buildRelease(t, commit, imagetest.Options{Label: "oac-test-" + commit})
	t.Cleanup(func() { os.RemoveAll(dir) })
	return r
}

// BuildUniqueAttestedRelease is BuildUniqueRelease with the Runtime archive
// of BuildAttestedRelease.
func BuildUniqueAttestedRelease(t testing.TB) *Release {
	t.Helper()
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	commit := hex.EncodeToString(b[:])
	r, dir := buildRelease(t, commit, imagetest.Options{Label: "oac-test-" + commit, Attestation: true})
	t.Cleanup(func() { os.RemoveAll(dir) })
	return r
}

// buildRelease builds a release in a new temporary directory, which it
// returns for the caller to remove.
func buildRelease(t testing.TB, commit string, img imagetest.Options) (*Release, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "oac-gen-release-")
	if err != nil {
		t.Fatal(err)
	}
	fx, err := imagetest.WriteFixture(dir, img)
	if err != nil {
		t.Fatal(err)
	}
	r := &Release{Commit: commit, Artifacts: map[string]string{}, Bytes: map[string][]byte{}, Image: fx.Identity}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r.Bytes[release.PathRuntimeImage] = read(fx.GzPath)
	r.Bytes[PathUnpacked] = read(fx.TarPath)
	r.Bytes[release.PathSeccomp] = []byte(`{"defaultAction":"SCMP_ACT_ERRNO","release":"` + commit + `"}` + "\n")
	r.Bytes[release.PathNode] = []byte("#!/bin/sh\necho oac-node " + commit + "\n")
	r.Bytes[release.PathMicroHelper] = []byte("#!/bin/sh\necho helper " + commit + "\n")
	r.Bytes[release.PathMicroRuntime] = []byte(FakeMSBScript)
	r.Bytes[release.PathMicroFirmware] = []byte("firmware " + commit + "\n")
	m := &release.Manifest{
		Artifacts:            map[string]release.Artifact{},
		Images:               map[string]string{release.ImageRuntime: fx.ConfigDigest},
		ImageManifestDigests: map[string]string{release.ImageRuntime: fx.ManifestDigest},
		Microsandbox: release.Microsandbox{Version: "0.7.2",
			RuntimeSHA256: release.SHA256Hex(r.Bytes[release.PathMicroRuntime]), FirmwareSHA256: release.SHA256Hex(r.Bytes[release.PathMicroFirmware])},
		Platform:     release.Platform,
		RuntimeRef:   "oac-runtime@" + fx.ManifestDigest,
		SourceCommit: commit,
		SourceTree:   strings.Repeat("c", 40),
	}
	for _, a := range release.Catalog(release.ProviderMicrosandbox) {
		if a.Role == release.RolePolicy {
			continue
		}
		b := r.Bytes[a.Path]
		art := release.Artifact{Filename: release.FileName(commit, a.Suffix), SHA256: release.SHA256Hex(b), Size: int64(len(b))}
		if a.Path == release.PathRuntimeImage {
			art.UnpackedSHA256, art.UnpackedSize = fx.TarSHA256, fx.TarSize
		}
		m.Artifacts[a.Path] = art
		p := filepath.Join(dir, art.Filename)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r.Artifacts[art.Filename] = p
	}
	files, err := releasetest.Files(m, r.Bytes[release.PathSeccomp], nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest, err = release.ParseManifest(files[release.ManifestName]); err != nil {
		t.Fatal(err)
	}
	r.Files = files
	return r, dir
}

// Spec is a specification running r with cpus CPUs (and a root disk for
// microsandbox).
func (r *Release) Spec(t testing.TB, providerName string, cpus int64) *release.Specification {
	t.Helper()
	rt := release.RuntimeOf(r.Manifest)
	s := &release.Specification{Provider: providerName, Resources: release.Resources{CPUs: cpus, MemoryMiB: 1024}, Runtime: &rt}
	if providerName == release.ProviderMicrosandbox {
		s.Resources.RootDiskMiB = 2048
	}
	raw, _ := s.MarshalJSON()
	parsed, err := release.ParseSpecification(providerName, raw)
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

// Server is one TLS origin serving the console's /node-install/ (the real
// console handler over published releases) and Core's configuration route
// for the test node's credential.
type Server struct {
	URL string
	CA  []byte // PEM of the server's certificate

	srv       *httptest.Server
	mu        sync.Mutex
	specs     map[int64]*release.Specification
	requests  map[string]int
	override  map[string]http.HandlerFunc
	coreReply func(w http.ResponseWriter, g int64) bool
}

// NewServer publishes the releases in a console payload and serves it.
func NewServer(t testing.TB, releases ...*Release) *Server {
	t.Helper()
	s := &Server{specs: map[int64]*release.Specification{}, requests: map[string]int{}, override: map[string]http.HandlerFunc{}}
	payload, err := os.MkdirTemp("", "oac-gen-console-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(payload) })
	for _, r := range releases {
		if err := console.Publish(payload, console.ReleaseFiles{Files: r.Files, Artifacts: r.Artifacts}); err != nil {
			t.Fatal(err)
		}
	}
	s.srv = httptest.NewUnstartedServer(nil)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	s.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	consoleHandler := console.Handler(payload, s.srv.Listener.Addr().String())
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/sandbox-node/configuration", s.configuration)
	mux.HandleFunc("/node-install/", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.requests[r.URL.Path]++
		h := s.override[r.URL.Path]
		s.mu.Unlock()
		if h != nil {
			h(w, r)
			return
		}
		consoleHandler.ServeHTTP(w, r)
	})
	s.srv.Config.Handler = mux
	return s
}

// SetSpec makes Core answer spec for generation g.
func (s *Server) SetSpec(g int64, spec *release.Specification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs[g] = spec
}

// Serve replaces the console's answer for one path.
func (s *Server) Serve(path string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.override[path] = h
}

// SetCoreReply lets f answer configuration reads first (true: answered).
func (s *Server) SetCoreReply(f func(w http.ResponseWriter, g int64) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.coreReply = f
}

// Count is the number of console requests for path.
func (s *Server) Count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

func (s *Server) configuration(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+Credential || r.Header.Get("X-OAC-Node-ID") != NodeID {
		http.Error(w, `{"error":{"code":"invalid_node_credential"}}`, http.StatusUnauthorized)
		return
	}
	g, err := strconv.ParseInt(r.URL.Query().Get("generation"), 10, 64)
	s.mu.Lock()
	spec, ok := s.specs[g]
	reply := s.coreReply
	s.mu.Unlock()
	if reply != nil && reply(w, g) {
		return
	}
	if err != nil || !ok {
		http.Error(w, `{"error":{"code":"invalid_request"}}`, http.StatusNotFound)
		return
	}
	raw, _ := spec.MarshalJSON()
	json.NewEncoder(w).Encode(map[string]any{
		"installation_id": InstallationID, "provider": spec.Provider, "core_url": s.URL, "generation": g,
		"specification": json.RawMessage(raw), "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4,
	})
}

// Node is a node root as an installation leaves it: base generation 1
// running the base release from the node root, its lease, identity,
// records and Runtime files.
type Node struct {
	Home     string
	Layout   layout.Node
	Provider string
	Base     *provider.Config
	// Store is the base microsandbox store (microsandbox nodes).
	Store string
}

// SetupNode writes the node under home (0700 directories, 0600 files,
// owned by the current user). dockerHost is the base configuration's
// docker.host ("" for the standard socket). For microsandbox, the base
// store is claimed and already holds the base image (in the fake msb's
// form); a Docker engine must be given the base image by the caller.
func SetupNode(t testing.TB, home string, srv *Server, providerName string, base *Release, dockerHost string) *Node {
	t.Helper()
	n := &Node{Home: home, Layout: layout.Node{Root: layout.NodeRootIn(home, InstallationID)}, Provider: providerName}
	root := n.Layout.Root
	for _, d := range []string{home, filepath.Join(home, layout.OacDir), filepath.Join(home, layout.NodesRel), root,
		filepath.Join(root, layout.StateParentDir), n.Layout.StateDir(), n.Layout.Generations(),
		filepath.Join(root, layout.RuntimeDir), filepath.Join(root, layout.ImagesDir), filepath.Join(root, layout.NativeDir), filepath.Join(root, layout.NativeBinDir)} {
		Mkdir(t, d)
	}
	write := func(rel string, data []byte, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	spec := base.Spec(t, providerName, 2)
	srv.SetSpec(1, spec)
	cfg := &provider.Config{InstallationID: InstallationID, Provider: providerName, CoreURL: provider.CoreURL(srv.URL), Generation: 1, Specification: spec}
	write(release.PathSeccomp, base.Bytes[release.PathSeccomp], 0o600)
	write(release.PathNode, base.Bytes[release.PathNode], 0o700)
	sums := map[string]string{}
	runtimePaths := []string{release.PathSeccomp, release.PathRuntimeImage, PathUnpacked}
	switch providerName {
	case release.ProviderDocker:
		if dockerHost == "" {
			dockerHost = provider.DockerHost
		}
		cfg.Docker = &provider.DockerConfig{Host: dockerHost, Image: base.Image.ConfigDigest, Network: provider.NetworkName(InstallationID),
			SeccompFile: filepath.Join(root, release.PathSeccomp), NestedSandbox: true}
	case release.ProviderMicrosandbox:
		runtimePaths = append(runtimePaths, release.PathMicroHelper, release.PathMicroRuntime, release.PathMicroFirmware)
		Mkdir(t, filepath.Join(root, "native", "microsandbox"))
		for _, p := range []string{release.PathMicroHelper, release.PathMicroRuntime, release.PathMicroFirmware} {
			write(p, base.Bytes[p], 0o700)
		}
		store, err := provider.StorePath(home, InstallationID)
		if err != nil {
			t.Fatal(err)
		}
		if err := microsandbox.ClaimStore(store, InstallationID, os.Getuid()); err != nil {
			t.Fatal(err)
		}
		n.Store = store
		Mkdir(t, filepath.Join(store, ".fake"))
		if err := os.WriteFile(filepath.Join(store, ".fake", base.Manifest.RuntimeRef), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		cfg.Microsandbox = &provider.MicrosandboxConfig{
			HelperPath: filepath.Join(root, release.PathMicroHelper), RuntimePath: filepath.Join(root, release.PathMicroRuntime),
			FirmwarePath: filepath.Join(root, release.PathMicroFirmware), RuntimeSHA256: spec.Runtime.RuntimeSHA256,
			FirmwareSHA256: spec.Runtime.FirmwareSHA256, RuntimeHome: store, Image: spec.Runtime.MicrosandboxRef,
			CPUs: spec.Resources.CPUs, MemoryMiB: spec.Resources.MemoryMiB, RootDiskMiB: spec.Resources.RootDiskMiB,
			Network: provider.MicrosandboxNetwork([]netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:443")}),
		}
	}
	for _, p := range runtimePaths {
		sums[p] = release.SHA256Hex(base.Bytes[p])
	}
	data, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	n.Base = cfg
	write(layout.ProviderConfigFile, data, 0o600)
	ra, _ := json.MarshalIndent(map[string]any{"installation_id": InstallationID, "source_commit": base.Commit, "sha256": sums}, "", "  ")
	write(layout.RuntimeArtifactsFile, append(ra, '\n'), 0o600)
	write(layout.PreparationFile, []byte(`{"source_url": "`+srv.URL+`"}`+"\n"), 0o600)
	write(layout.HelperLauncherFile, launcher.Bytes(), 0o600)
	write(layout.CoreCAFile, srv.CA, 0o600)
	nid := map[string]any{
		"identity": map[string]any{"specification_digest": spec.Digest(), "deployment_generation": 1, "node_id": NodeID,
			"installation_id": InstallationID, "provider": providerName, "backend_fingerprint": strings.Repeat("f", 64), "max_active": 2, "max_retained": 4},
		"credential": Credential, "core_url": srv.URL, "owner_epoch": 1,
		"core_ca": filepath.Join(root, layout.CoreCAFile), "core_ca_sha256": release.SHA256Hex(srv.CA),
	}
	idb, _ := json.MarshalIndent(nid, "", "  ")
	write(layout.NodeIdentityFile, append(idb, '\n'), 0o600)
	l, err := lease.Initialize(n.Layout.Generations(), lease.Identity{InstallationID: InstallationID, Generation: 1, SpecificationDigest: spec.Digest()}, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return n
}

// Mkdir makes a 0700 directory (an existing one is chmod'ed to 0700).
func Mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o700); err != nil {
		t.Fatal(err)
	}
}

// HostLock is the host lock's path in a snapshot of a host root.
const HostLock = "run/oac-node.lock"

// DiffHost is treetest.Diff of two snapshots holding a host root (keyed
// relative to the root or by full path), except that the host lock is no
// difference when after has it and before has not: a command may create
// it even when it changes nothing (CONTRACT §10). Nor are then the times
// of the lock's directory, which change with the new entry.
func DiffHost(before, after treetest.Tree) string {
	for k := range after {
		if k != HostLock && !strings.HasSuffix(k, "/"+HostLock) {
			continue
		}
		if _, ok := before[k]; ok {
			break
		}
		after = maps.Clone(after)
		delete(after, k)
		run := filepath.Dir(k)
		if v, ok := before[run]; ok && treetest.WithoutTimes(v) == treetest.WithoutTimes(after[run]) {
			after[run] = v
		}
		break
	}
	return treetest.Diff(before, after)
}

// MachineEngine is the machine's Docker Engine for a test, which it skips
// with one line when there is none; rel's images are removed from the
// engine when the test ends, and must be gone.
func MachineEngine(t *testing.T, rel *Release) *docker.Client {
	t.Helper()
	if _, err := os.Stat("/var/run/docker.sock"); err != nil {
		t.Skip("no Docker Engine socket at /var/run/docker.sock")
	}
	dk, err := docker.New(docker.DefaultHost)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dk.Close() })
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := dk.Info(cx); err != nil {
		t.Skipf("the Docker Engine does not answer: %v", err)
	}
	raw, err := client.New(client.WithHost(docker.DefaultHost))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		defer raw.Close()
		cx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, id := range []string{rel.Image.ConfigDigest, rel.Image.ManifestDigest} {
			raw.ImageRemove(cx, id, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			if _, err := raw.ImageInspect(cx, id); err == nil {
				t.Errorf("cleanup: image %s is still in the engine", id)
			}
		}
	})
	return dk
}
