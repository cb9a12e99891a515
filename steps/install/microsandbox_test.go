package install

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Group ids of the microsandbox host root's group database.
const (
	msbKVMGID   = 4243
	msbOtherGID = 4244
)

const msbToken = "enroll-7a1d0c93e5"

// msbRun is a microsandbox installation through Run: a host root directly
// under / (so that the account's store path is exactly as long as the
// test wants), a real /dev/kvm character device in it, a TLS origin
// serving the console's /node-install/ and Core's configuration route, the
// fakes for accounts and systemd, and the real service-account child,
// whose microsandbox adapter is the real microsandbox.CLI running the
// release's fake msb.
type msbRun struct {
	base    string
	host    layout.Host
	srv     *httptest.Server
	conf    []byte
	accts   *accountstest.Fake
	systemd *systemdtest.Fake
	cmd     Command
	out     bytes.Buffer

	mu   sync.Mutex
	reqs []string // the console's requests
}

// msbBase creates a new directory /m<digits> whose host root
// <dir>/host makes the account's microsandbox store storeLen bytes long.
func msbBase(t *testing.T, storeLen int) string {
	t.Helper()
	// store = <root>/var/lib/oac-node/.oac/m/<12 hex>: len(root) + 37;
	// root = <base>/host: len(base) + 5; base = /m<digits>.
	digits := storeLen - 37 - 5 - 2
	if digits < 1 {
		t.Fatalf("a store of %d bytes needs a base shorter than /m<digit>", storeLen)
	}
	for range 100 {
		base := "/m" + fmt.Sprintf("%0*d", digits, rand.IntN(1_000_000_000))[:digits]
		err := os.Mkdir(base, 0o755)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, unix.EROFS) {
			t.Skipf("needs a directory directly under / for a store path of %d bytes: %v", storeLen, err)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(base) })
		os.Chmod(base, 0o755)
		return base
	}
	t.Fatal("no free name for the test's base directory under /")
	return ""
}

func newMSBRun(t *testing.T, storeLen int) *msbRun {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the service-account child runs as another user, and /dev/kvm is made with mknod")
	}
	r := &msbRun{base: msbBase(t, storeLen)}
	r.host = layout.Host{Root: filepath.Join(r.base, "host")}
	for _, d := range []string{"etc/systemd/system", "var/lib", "run/systemd/system", "dev"} {
		if err := os.MkdirAll(filepath.Join(r.host.Root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Mkdir(filepath.Join(r.base, "engine"), 0o777)
	os.Chmod(filepath.Join(r.base, "engine"), 0o777)
	var err error
	if r.accts, err = accountstest.New(r.host.Root); err != nil {
		t.Fatal(err)
	}
	groups := fmt.Sprintf("root:x:0:\ndocker:x:4242:\nkvm:x:%d:\ndisk:x:%d:\n", msbKVMGID, msbOtherGID)
	if err := os.WriteFile(filepath.Join(r.host.Root, "etc/group"), []byte(groups), 0o644); err != nil {
		t.Fatal(err)
	}
	kvm := filepath.Join(r.host.Root, "dev/kvm")
	if err := unix.Mknod(kvm, unix.S_IFCHR|0o660, int(unix.Mkdev(10, 232))); errors.Is(err, unix.EPERM) {
		t.Skipf("needs mknod for the test host's /dev/kvm: %v", err)
	} else if err != nil {
		t.Fatal(err)
	}
	os.Chown(kvm, 0, msbKVMGID)
	os.Chmod(kvm, 0o660)

	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	spec := rel.Spec(t, release.ProviderMicrosandbox, 1)
	payload := filepath.Join(r.base, "payload")
	if err := console.Publish(payload, console.ReleaseFiles{Files: rel.Files, Artifacts: rel.Artifacts}); err != nil {
		t.Fatal(err)
	}
	if err := console.Activate(payload, rel.Commit); err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewUnstartedServer(nil)
	r.srv.StartTLS()
	t.Cleanup(r.srv.Close)
	raw, _ := spec.MarshalJSON()
	r.conf, _ = json.Marshal(map[string]any{
		"installation_id": generationtest.InstallationID, "provider": "microsandbox", "core_url": r.srv.URL, "generation": 1,
		"specification": json.RawMessage(raw), "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4,
	})
	files := console.Handler(payload, r.srv.Listener.Addr().String())
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/sandbox-node/configuration", func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Authorization") != "Bearer "+msbToken {
			http.Error(w, `{"error":{"code":"invalid_node_credential"}}`, http.StatusUnauthorized)
			return
		}
		w.Write(r.conf)
	})
	mux.HandleFunc("/node-install/", func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.reqs = append(r.reqs, req.URL.Path)
		r.mu.Unlock()
		files.ServeHTTP(w, req)
	})
	r.srv.Config.Handler = mux
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	pool := x509.NewCertPool()
	pool.AddCert(r.srv.Certificate())

	bin, err := privsep.Capture()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bin.Close() })
	real := children(t, privsep.Options{Binary: bin, Home: r.host.Home()}, accounts.Under(r.host.Root))
	// Core's fakes: the node program of the fixture does not connect, so
	// readiness is answered here, and so is a registered node's read of
	// its configuration with its credential. Every other step runs in the
	// real child.
	child := func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		switch req.Step {
		case string(workflow.InstallWaitReady):
			return asaccount.Answer{Outcome: workflow.Done, Facts: map[string]string{"node_id": generationtest.NodeID}}, nil
		case StepConfiguration:
			out, err := json.Marshal(Output{Configuration: r.conf})
			return asaccount.Answer{Output: out}, err
		}
		return real(ctx, req)
	}
	r.systemd = systemdtest.New(filepath.Join(r.host.Root, "etc/systemd/system"))
	r.cmd = Command{
		Options: Options{InstallationID: generationtest.InstallationID, SourceURL: r.srv.URL, CoreURL: r.srv.URL,
			Provider: "microsandbox", CoreCA: ca},
		Host: r.host, Token: msbToken, Machine: "x86_64", Core: CoreReader{Roots: trust.Only(pool)},
		Engine: msbNoEngine{t}, Accounts: r.accts, Systemd: r.systemd, Child: child, Version: "test", Out: &r.out,
	}
	return r
}

// msbNoEngine is a Docker Engine a microsandbox installation never asks.
type msbNoEngine struct{ t *testing.T }

func (e msbNoEngine) Info(context.Context) (docker.HostInfo, error) {
	e.t.Error("a microsandbox installation asked the Docker Engine for its facts")
	return docker.HostInfo{}, errors.New("no Docker Engine")
}

func (e msbNoEngine) NetworkInspect(_ context.Context, name string) (docker.Network, error) {
	e.t.Errorf("a microsandbox installation inspected the Docker network %s", name)
	return docker.Network{}, errors.New("no Docker Engine")
}

func (r *msbRun) run(t *testing.T) (*workflow.Report, error) {
	t.Helper()
	r.out.Reset()
	return Run(context.Background(), r.cmd)
}

// installed runs a first installation to completion; the reruns that
// follow give no token.
func (r *msbRun) installed(t *testing.T) {
	t.Helper()
	rep, err := r.run(t)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, r.out.String())
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("install: condition %s\n%s", rep.Condition, r.out.String())
	}
	r.cmd.Token = ""
}

func (r *msbRun) store(t *testing.T) string {
	t.Helper()
	s, err := provider.StorePath(r.host.Home(), generationtest.InstallationID)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// image is the fake msb's record of the Runtime image in the store.
func (r *msbRun) image(t *testing.T) string {
	t.Helper()
	return filepath.Join(r.store(t), ".fake", generationtest.BuildRelease(t, generationtest.CommitA).Manifest.RuntimeRef)
}

func (r *msbRun) registrations() int {
	data, _ := os.ReadFile(filepath.Join(r.base, "engine", "registrations"))
	return strings.Count(string(data), "\n")
}

// tree is every entry below the base directory (host root, engine, but
// not the console's payload): mode, owner, size, content hash, device,
// and, with times, inode, mtime and ctime, so that any write shows.
func (r *msbRun) tree(t *testing.T, times bool) map[string]string {
	t.Helper()
	return msbTree(t, times, r.host.Root, filepath.Join(r.base, "engine"))
}

// msbTree is every entry below dirs (see tree).
func msbTree(t *testing.T, times bool, dirs ...string) map[string]string {
	t.Helper()
	return treetest.SnapshotPaths(t, treetest.Options{Owner: true, Times: times}, dirs...)
}

// The whole microsandbox installation through Run, with the store path at
// its longest: KVM and the store checked, the account in group kvm only,
// the image loaded by the release's msb into the store claimed for the
// installation, no Docker object anywhere, a unit without Docker ordering.
func TestInstallMicrosandbox(t *testing.T) {
	r := newMSBRun(t, provider.MaxStorePath)
	if n := len(r.store(t)); n != provider.MaxStorePath {
		t.Fatalf("the store path %s is %d bytes, want %d", r.store(t), n, provider.MaxStorePath)
	}
	r.installed(t)
	id := generationtest.InstallationID
	if !strings.Contains(r.out.String(), "  Sandbox Provider: microsandbox (ready)\n") {
		t.Errorf("the summary does not say microsandbox (ready):\n%s", r.out.String())
	}
	u, err := accounts.Under(r.host.Root).LookupUser(layout.Account)
	if err != nil {
		t.Fatal(err)
	}
	// The image is in the store, which is claimed for the installation.
	if err := microsandbox.CheckStoreOwner(r.store(t), ident.InstallationID(id), u.UID); err != nil {
		t.Errorf("store: %v", err)
	}
	if _, err := os.Stat(r.image(t)); err != nil {
		t.Errorf("the store does not hold the Runtime image: %v", err)
	}
	// Nothing went to the Docker Engine.
	if entries, _ := os.ReadDir(filepath.Join(r.base, "engine")); len(entries) != 1 || entries[0].Name() != "registrations" {
		t.Errorf("the Docker Engine fake was used: %v", entries)
	}
	root := r.host.NodeRoot(ident.InstallationID(id))
	data, err := os.ReadFile(filepath.Join(root, "provider.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pc map[string]json.RawMessage
	if err := json.Unmarshal(data, &pc); err != nil {
		t.Fatal(err)
	}
	if _, ok := pc["docker"]; ok {
		t.Errorf("provider.json has a docker object:\n%s", data)
	}
	var m struct {
		RuntimeHome string `json:"runtime_home"`
		Image       string `json:"image"`
		RuntimePath string `json:"runtime_path"`
	}
	if err := json.Unmarshal(pc["microsandbox"], &m); err != nil || m.RuntimeHome != r.store(t) ||
		m.RuntimePath != filepath.Join(root, release.PathMicroRuntime) {
		t.Errorf("provider.json's microsandbox object: %+v %v\n%s", m, err, data)
	}
	// Group kvm only, in the databases and in the bookkeeping.
	names, err := accounts.Under(r.host.Root).GroupNames(layout.Account)
	if err != nil {
		t.Fatal(err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return n == layout.Account })
	if !slices.Equal(names, []string{"kvm"}) {
		t.Errorf("the account's groups besides its own: %v, want [kvm]", names)
	}
	db, err := bookkeeping.Open(r.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	groups, _ := db.Groups()
	db.Close()
	if len(groups) != 1 || groups[0].Name != "kvm" {
		t.Errorf("bookkeeping groups %+v, want kvm only", groups)
	}
	unit, err := os.ReadFile(r.host.Unit(ident.InstallationID(id)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(unit, []byte("\nAfter=network-online.target\n")) || bytes.Contains(unit, []byte("docker")) {
		t.Errorf("the unit's ordering:\n%s", unit)
	}
	rec, err := os.ReadFile(r.host.Record(ident.InstallationID(id)))
	if err != nil || !strings.Contains(string(rec), `"provider": "microsandbox"`) {
		t.Errorf("host record: %v\n%s", err, rec)
	}
	if n := r.registrations(); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
}

// A registered node's rerun finds the image in the store (msb only
// inspects: a load, list or removal would fail) and writes nothing below
// the account's .oac: neither the node root nor the store. (Root's own
// journal and bookkeeping are the rerun rules' concern.)
func TestInstallMicrosandboxRegisteredRerun(t *testing.T) {
	r := newMSBRun(t, provider.MaxStorePath)
	r.installed(t)
	fake := filepath.Join(r.store(t), ".fake")
	for _, q := range []string{"load", "list", "remove", "sandboxes"} {
		if err := os.WriteFile(filepath.Join(fake, "fail-"+q), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	oac := filepath.Join(r.host.Home(), ".oac")
	before := msbTree(t, true, oac, filepath.Join(r.base, "engine"))
	rep, err := r.run(t)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %+v\n%s", err, rep, r.out.String())
	}
	if !strings.Contains(r.out.String(), "  Sandbox Provider: microsandbox (ready)\n") {
		t.Errorf("the summary does not say microsandbox (ready):\n%s", r.out.String())
	}
	if d := generationtest.DiffHost(before, msbTree(t, true, oac, filepath.Join(r.base, "engine"))); d != "" {
		t.Errorf("the registered rerun wrote:\n%s", d)
	}
	if n := r.registrations(); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
	t.Logf("first run and rerun:\n%s", r.out.String())
	// The rerun did ask msb: an inspection that fails is taken as a
	// missing image, whose load then fails.
	if err := os.WriteFile(filepath.Join(fake, "fail-inspect"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := r.run(t); err == nil && rep.Condition == workflow.Complete {
		t.Errorf("a rerun completed although msb cannot inspect the image nor load it")
	}
}

// An image deleted from the store is loaded again from the kept archive;
// the node is not enrolled again.
func TestInstallMicrosandboxReloadsADeletedImage(t *testing.T) {
	r := newMSBRun(t, provider.MaxStorePath)
	r.installed(t)
	if err := os.Remove(r.image(t)); err != nil {
		t.Fatal(err)
	}
	reqs := len(r.nodeFileRequests())
	rep, err := r.run(t)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("rerun: %v %+v\n%s", err, rep, r.out.String())
	}
	if _, err := os.Stat(r.image(t)); err != nil {
		t.Errorf("the image was not loaded again: %v", err)
	}
	if n := r.registrations(); n != 1 {
		t.Errorf("%d registrations, want 1", n)
	}
	if got := r.nodeFileRequests()[reqs:]; len(got) != 0 {
		t.Errorf("node files downloaded again: %v, want none (the archive is kept)", got)
	}
	if entries, _ := os.ReadDir(filepath.Join(r.base, "engine")); len(entries) != 1 {
		t.Errorf("the Docker Engine fake was used: %v", entries)
	}
}

// nodeFileRequests are the console's requests for node files (not the
// release metadata).
func (r *msbRun) nodeFileRequests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, p := range r.reqs {
		if strings.Contains(p, "/artifacts/") {
			out = append(out, p)
		}
	}
	return out
}

// Every microsandbox refusal comes before the first change: the host root
// and the engine are as they were, and msb never ran (no store).
func TestInstallMicrosandboxRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		storeLen int
		setup    func(t *testing.T, r *msbRun)
		want     string
	}{
		{"store path of 49 bytes", provider.MaxStorePath + 1, nil, "49 bytes, at most 48"},
		{"no /dev/kvm", provider.MaxStorePath, func(t *testing.T, r *msbRun) {
			os.Remove(filepath.Join(r.host.Root, "dev/kvm"))
		}, "KVM is not available"},
		{"/dev/kvm not a character device", provider.MaxStorePath, func(t *testing.T, r *msbRun) {
			p := filepath.Join(r.host.Root, "dev/kvm")
			os.Remove(p)
			os.WriteFile(p, nil, 0o660)
			os.Chown(p, 0, msbKVMGID)
		}, "KVM is not available"},
		{"/dev/kvm in another group", provider.MaxStorePath, func(t *testing.T, r *msbRun) {
			os.Chown(filepath.Join(r.host.Root, "dev/kvm"), 0, msbOtherGID)
		}, "belongs to group disk"},
		{"/dev/kvm in group root", provider.MaxStorePath, func(t *testing.T, r *msbRun) {
			os.Chown(filepath.Join(r.host.Root, "dev/kvm"), 0, 0)
		}, "belongs to group root"},
		{"/dev/kvm not group writable", provider.MaxStorePath, func(t *testing.T, r *msbRun) {
			os.Chmod(filepath.Join(r.host.Root, "dev/kvm"), 0o640)
		}, "not group read-write"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newMSBRun(t, tc.storeLen)
			if tc.setup != nil {
				tc.setup(t, r)
			}
			before := r.tree(t, true)
			_, err := r.run(t)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("error %v, want %q ending in \"Nothing was changed.\"", err, tc.want)
			}
			if d := generationtest.DiffHost(before, r.tree(t, true)); d != "" {
				t.Errorf("the refusal changed:\n%s", d)
			}
			if calls := r.accts.Calls(); len(calls) != 0 {
				t.Errorf("account calls: %v", calls)
			}
			if r.reqs != nil {
				t.Errorf("requests to the console: %v", r.reqs)
			}
		})
	}
}

// A /dev/kvm every user may read and write needs no group (CONTRACT §4.5:
// world read-write is accepted); the microsandbox checks then all pass.
func TestPreflightKVMWorldReadWrite(t *testing.T) {
	r := newMSBRun(t, provider.MaxStorePath)
	kvm := filepath.Join(r.host.Root, "dev/kvm")
	os.Chown(kvm, 0, 0)
	os.Chmod(kvm, 0o666)
	pf := &Preflight{Host: r.host, InstallationID: generationtest.InstallationID, Provider: release.ProviderMicrosandbox, NewNode: true,
		CPUs: 1, MemoryMiB: 1024, HostCPUs: 2, HostMemoryMiB: 4096}
	for _, c := range pf.ProviderChecks(context.Background(), release.ProviderMicrosandbox) {
		if c.Failed() || c.Skipped != "" {
			t.Errorf("%s: %v %s", c.Name, c.Err, c.Skipped)
		}
	}
}
