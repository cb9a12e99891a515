package generation

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
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

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/steps/console"
	"github.com/openagentcore/oac-node-install/steps/download"
	"github.com/openagentcore/oac-node-install/steps/image"
	"github.com/openagentcore/oac-node-install/steps/layout"
	"github.com/openagentcore/oac-node-install/steps/lease"
	"github.com/openagentcore/oac-node-install/steps/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/provider"
	"github.com/openagentcore/oac-node-install/steps/release"
)

const (
	testID         = "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a"
	testNodeID     = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
	testCredential = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	commitA        = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa1"
	commitB        = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb2"
)

// fakeMSBScript is the msb artifact of the fixture releases: a fake msb
// keeping one file per loaded image in $MSB_HOME/.fake. A file
// $MSB_HOME/.fake/fail-<what> makes that query fail; sandboxes lists the
// file $MSB_HOME/.fake/sandboxes verbatim when present.
const fakeMSBScript = `#!/bin/sh
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

// fixtureRelease is a release: its files as the console publishes them and
// what a specification running it says.
type fixtureRelease struct {
	commit   string
	manifest *release.Manifest
	files    map[string][]byte // fixed names: manifest.json, SHA256SUMS, runtime/seccomp.json
	art      map[string]string // released file name -> local path
	bytes    map[string][]byte // catalog path -> bytes (images/runtime.tar too)
	image    image.Identity
}

var (
	fixtureMu    sync.Mutex
	fixtureCache = map[string]*fixtureRelease{}
)

// buildRelease builds (once per test binary and commit) a release with a
// real fixture Runtime image, a seccomp profile, and the fake msb.
func buildRelease(t testing.TB, commit string) *fixtureRelease {
	t.Helper()
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if r, ok := fixtureCache[commit]; ok {
		return r
	}
	dir, err := os.MkdirTemp("", "oac-gen-release-")
	if err != nil {
		t.Fatal(err)
	}
	fx, err := image.WriteFixture(dir, image.FixtureOptions{Label: "runtime-" + commit})
	if err != nil {
		t.Fatal(err)
	}
	r := &fixtureRelease{commit: commit, art: map[string]string{}, bytes: map[string][]byte{}, image: fx.Identity}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	r.bytes[release.PathRuntimeImage] = read(fx.GzPath)
	r.bytes[PathUnpacked] = read(fx.TarPath)
	r.bytes[release.PathSeccomp] = []byte(`{"defaultAction":"SCMP_ACT_ERRNO","release":"` + commit + `"}` + "\n")
	r.bytes[release.PathNode] = []byte("#!/bin/sh\necho oac-node " + commit + "\n")
	r.bytes[release.PathMicroHelper] = []byte("#!/bin/sh\necho helper " + commit + "\n")
	r.bytes[release.PathMicroRuntime] = []byte(fakeMSBScript)
	r.bytes[release.PathMicroFirmware] = []byte("firmware " + commit + "\n")
	m := &release.Manifest{
		Artifacts:            map[string]release.Artifact{},
		Images:               map[string]string{release.ImageRuntime: fx.ConfigDigest},
		ImageManifestDigests: map[string]string{release.ImageRuntime: fx.ManifestDigest},
		Microsandbox: release.Microsandbox{Version: "0.7.2",
			RuntimeSHA256: release.SHA256Hex(r.bytes[release.PathMicroRuntime]), FirmwareSHA256: release.SHA256Hex(r.bytes[release.PathMicroFirmware])},
		Platform:     release.Platform,
		RuntimeRef:   "oac-runtime@" + fx.ManifestDigest,
		SourceCommit: commit,
		SourceTree:   strings.Repeat("c", 40),
	}
	for _, a := range release.Catalog(release.ProviderMicrosandbox) {
		if a.Role == release.RolePolicy {
			continue
		}
		b := r.bytes[a.Path]
		art := release.Artifact{Filename: release.FileName(commit, a.Suffix), SHA256: release.SHA256Hex(b), Size: int64(len(b))}
		if a.Path == release.PathRuntimeImage {
			art.UnpackedSHA256, art.UnpackedSize = fx.TarSHA256, fx.TarSize
		}
		m.Artifacts[a.Path] = art
		p := filepath.Join(dir, art.Filename)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r.art[art.Filename] = p
	}
	mb, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if r.manifest, err = release.ParseManifest(mb); err != nil {
		t.Fatal(err)
	}
	sums, err := release.Sums{release.ManifestName: release.SHA256Hex(mb), release.SeccompName: release.SHA256Hex(r.bytes[release.PathSeccomp])}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	r.files = map[string][]byte{release.ManifestName: mb, release.SumsName: sums, release.SeccompName: r.bytes[release.PathSeccomp]}
	fixtureCache[commit] = r
	return r
}

// spec is a specification running r.
func (r *fixtureRelease) spec(t testing.TB, providerName string, cpus int64) *release.Specification {
	t.Helper()
	rt := release.RuntimeOf(r.manifest)
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

// testServer is one TLS origin serving the console's /node-install/ (the
// real console handler over published fixture releases) and Core's
// configuration route.
type testServer struct {
	srv     *httptest.Server
	URL     string
	CA      []byte
	payload string

	mu        sync.Mutex
	specs     map[int64]*release.Specification
	requests  map[string]int
	override  map[string]http.HandlerFunc // path -> handler replacing the console's
	coreReply func(w http.ResponseWriter, g int64) bool
}

func newTestServer(t testing.TB, releases ...*fixtureRelease) *testServer {
	t.Helper()
	s := &testServer{specs: map[int64]*release.Specification{}, requests: map[string]int{}, override: map[string]http.HandlerFunc{}}
	var err error
	if s.payload, err = os.MkdirTemp("", "oac-gen-console-"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(s.payload) })
	for _, r := range releases {
		if err := console.Publish(s.payload, console.ReleaseFiles{Files: r.files, Artifacts: r.art}); err != nil {
			t.Fatal(err)
		}
	}
	s.srv = httptest.NewUnstartedServer(nil)
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL
	s.CA = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
	consoleHandler := console.Handler(s.payload, s.srv.Listener.Addr().String())
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

func (s *testServer) setSpec(g int64, spec *release.Specification) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.specs[g] = spec
}

func (s *testServer) serve(path string, h http.HandlerFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.override[path] = h
}

func (s *testServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path]
}

func (s *testServer) configuration(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+testCredential || r.Header.Get("X-OAC-Node-ID") != testNodeID {
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
		"installation_id": testID, "provider": spec.Provider, "core_url": s.URL, "generation": g,
		"specification": json.RawMessage(raw), "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4,
	})
}

// notFoundError follows the errdefs convention image.Resolve relies on.
type notFoundError struct{ ref string }

func (e notFoundError) Error() string { return "No such image: " + e.ref }
func (notFoundError) NotFound()       {}

// fakeDocker is a Docker Engine whose images live in a JSON file, so that
// it survives the crash harness killing the process. Store "containerd"
// identifies images by manifest digest, anything else by config digest.
type fakeDocker struct {
	path  string
	store string
}

type fakeDockerState struct {
	Images []image.Identity `json:"images"`
	Loads  int              `json:"loads"`
}

func (f *fakeDocker) state() (fakeDockerState, error) {
	var st fakeDockerState
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(data, &st)
}

func (f *fakeDocker) ImageInspect(ctx context.Context, ref string) (string, string, string, error) {
	st, err := f.state()
	if err != nil {
		return "", "", "", err
	}
	for _, im := range st.Images {
		if f.store == "containerd" && ref == im.ManifestDigest {
			return im.ManifestDigest, "linux", "amd64", nil
		}
		if f.store != "containerd" && ref == im.ConfigDigest {
			return im.ConfigDigest, "linux", "amd64", nil
		}
	}
	return "", "", "", notFoundError{ref}
}

func (f *fakeDocker) ImageLoad(ctx context.Context, path string) error {
	id, err := image.Identify(path)
	if err != nil {
		return err
	}
	st, err := f.state()
	if err != nil {
		return err
	}
	st.Loads++
	present := false
	for _, im := range st.Images {
		present = present || im == id
	}
	if !present {
		st.Images = append(st.Images, id)
	}
	data, _ := json.Marshal(st)
	if err := journal.AtomicWrite(f.path, data, 0o600); err != nil {
		return err
	}
	journal.Failpoint("fake-docker-after-load")
	return nil
}

// forget removes an image from the fake engine (what only an operator
// does).
func (f *fakeDocker) forget(t testing.TB, id image.Identity) {
	t.Helper()
	st, err := f.state()
	if err != nil {
		t.Fatal(err)
	}
	var keep []image.Identity
	for _, im := range st.Images {
		if im != id {
			keep = append(keep, im)
		}
	}
	st.Images = keep
	data, _ := json.Marshal(st)
	if err := journal.AtomicWrite(f.path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testNode is a node root as an installation leaves it: base generation 1
// running release base, its lease, identity, records and Runtime files.
type testNode struct {
	t        testing.TB
	home     string
	node     layout.Node
	provider string
	srv      *testServer
	base     *fixtureRelease
	docker   *fakeDocker
	baseCfg  *provider.Config
	log      *bytes.Buffer
}

// setupNode writes the node under home. The base image is already in the
// fake engine (Docker) or store (microsandbox).
func setupNode(t testing.TB, home string, srv *testServer, providerName string, base *fixtureRelease) *testNode {
	t.Helper()
	n := &testNode{t: t, home: home, node: layout.Node{Root: layout.NodeRootIn(home, testID)}, provider: providerName, srv: srv, base: base,
		docker: &fakeDocker{path: filepath.Join(home, "docker-engine.json")}, log: &bytes.Buffer{}}
	root := n.node.Root
	for _, d := range []string{home, filepath.Join(home, ".oac"), filepath.Join(home, ".oac", "nodes"), root,
		filepath.Join(root, "state"), n.node.StateDir(), n.node.Generations(),
		filepath.Join(root, "runtime"), filepath.Join(root, "images"), filepath.Join(root, "native"), filepath.Join(root, "native", "bin")} {
		mkdir(t, d)
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
	spec := base.spec(t, providerName, 2)
	srv.setSpec(1, spec)
	cfg := &provider.Config{InstallationID: testID, Provider: providerName, CoreURL: provider.CoreURL(srv.URL), Generation: 1, Specification: spec}
	write(release.PathSeccomp, base.bytes[release.PathSeccomp], 0o600)
	write(release.PathNode, base.bytes[release.PathNode], 0o700)
	ra := &RuntimeArtifacts{InstallationID: testID, SourceCommit: base.commit, SHA256: map[string]string{}}
	for _, p := range runtimePaths(providerName) {
		ra.SHA256[p] = release.SHA256Hex(base.bytes[p])
	}
	switch providerName {
	case release.ProviderDocker:
		cfg.Docker = &provider.DockerConfig{Host: provider.DockerHost, Image: base.image.ConfigDigest, Network: provider.NetworkName(testID),
			SeccompFile: filepath.Join(root, release.PathSeccomp), NestedSandbox: true}
		n.docker.load(t, base)
	case release.ProviderMicrosandbox:
		mkdir(t, filepath.Join(root, "native", "microsandbox"))
		for _, p := range []string{release.PathMicroHelper, release.PathMicroRuntime, release.PathMicroFirmware} {
			write(p, base.bytes[p], 0o700)
		}
		store, err := microsandbox.StorePath(home, testID)
		if err != nil {
			t.Fatal(err)
		}
		if err := microsandbox.ClaimStore(store, testID, os.Getuid()); err != nil {
			t.Fatal(err)
		}
		mkdir(t, filepath.Join(store, ".fake"))
		if err := os.WriteFile(filepath.Join(store, ".fake", base.manifest.RuntimeRef), nil, 0o600); err != nil {
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
	data, err := cfg.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	n.baseCfg = cfg
	write("provider.json", data, 0o600)
	rab, err := ra.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	write("runtime-artifacts.json", rab, 0o600)
	write("preparation.json", []byte(`{"source_url": "`+srv.URL+`"}`+"\n"), 0o600)
	write("core-ca.pem", srv.CA, 0o600)
	nid := map[string]any{
		"identity": map[string]any{"specification_digest": spec.Digest(), "deployment_generation": 1, "node_id": testNodeID,
			"installation_id": testID, "provider": providerName, "backend_fingerprint": strings.Repeat("f", 64), "max_active": 2, "max_retained": 4},
		"credential": testCredential, "core_url": srv.URL, "owner_epoch": 1,
		"core_ca": filepath.Join(root, "core-ca.pem"), "core_ca_sha256": release.SHA256Hex(srv.CA),
	}
	idb, _ := json.MarshalIndent(nid, "", "  ")
	write("state/node/identity.json", append(idb, '\n'), 0o600)
	l, err := lease.Initialize(n.node.Generations(), lease.Identity{InstallationID: testID, Generation: 1, SpecificationDigest: spec.Digest()}, os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	return n
}

func mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o700); err != nil {
		t.Fatal(err)
	}
}

// load puts a release's image in the fake engine.
func (f *fakeDocker) load(t testing.TB, r *fixtureRelease) {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "runtime.tar")
	if err := os.WriteFile(p, r.bytes[PathUnpacked], 0o600); err != nil {
		t.Fatal(err)
	}
	st, _ := f.state()
	loads := st.Loads
	if err := f.ImageLoad(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	st, _ = f.state()
	st.Loads = loads
	data, _ := json.Marshal(st)
	journal.AtomicWrite(f.path, data, 0o600)
}

// options are the helper options of a run on this node.
func (n *testNode) options(action string, g int64, spec *release.Specification) Options {
	return Options{
		Action:   action,
		Identity: lease.Identity{InstallationID: testID, Generation: g, SpecificationDigest: spec.Digest()},
		Home:     n.home,
		UID:      os.Getuid(),
		Docker:   func(context.Context, string) (Docker, error) { return n.docker, nil },
		Download: download.Options{RetrySleeps: []time.Duration{time.Millisecond, time.Millisecond}, StallWindow: 5 * time.Second},
		Log:      n.log,
	}
}

// run runs one helper action for generation g with specification spec.
func (n *testNode) run(action string, g int64, spec *release.Specification) error {
	return n.runWith(n.options(action, g, spec))
}

func (n *testNode) runWith(opts Options) error {
	e, err := NewEnv(opts)
	if err != nil {
		return err
	}
	defer e.Close()
	_, err = Run(context.Background(), e)
	return err
}

func (n *testNode) path(rel ...string) string {
	return filepath.Join(append([]string{n.node.Root}, rel...)...)
}

func (n *testNode) gen(name string) string { return filepath.Join(n.node.Generations(), name) }

// snapshot lists every file below dir with its mode and content hash.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			out[rel] = fmt.Sprintf("%v %s", fi.Mode(), release.SHA256Hex(data))
		default:
			out[rel] = fi.Mode().String()
		}
		return nil
	})
	return out
}

func diffSnapshots(a, b map[string]string) string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: added %q", k, v))
		}
	}
	return strings.Join(d, "\n")
}
