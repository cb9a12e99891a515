package install

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/console"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
	"github.com/openagentcore/oac-node-install/workflow"
)

// bundleEngine is the file engine with the Docker facts preflight reads.
type bundleEngine struct{ *dockertest.FileEngine }

func (bundleEngine) Info(context.Context) (docker.HostInfo, error) {
	return docker.HostInfo{NCPU: 4, MemTotal: 8 << 30, MemoryLimit: true, CPUCfsQuota: true}, nil
}

// offlineCore is Core's configuration route for one enrollment token; it
// serves no node files and counts every request for one.
type offlineCore struct {
	srv      *httptest.Server
	mu       sync.Mutex
	conf     []byte
	consoles int
}

func newOfflineCore(t *testing.T) *offlineCore {
	c := &offlineCore{}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/sandbox-node/configuration", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+bundleToken {
			http.Error(w, "{}", http.StatusUnauthorized)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		w.Write(c.conf)
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.consoles++
		c.mu.Unlock()
		http.NotFound(w, r)
	})
	c.srv = httptest.NewTLSServer(mux)
	t.Cleanup(c.srv.Close)
	return c
}

func (c *offlineCore) consoleRequests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.consoles
}

const bundleToken = "enroll-5be0c3d1f9"

// bundleRun is an installation from an offline bundle through Run: the
// host fixture's root, accounts, systemd and service-account child, a Core
// that answers the token, and a bundle whose current release is A while
// Core selected the Runtime of release B.
type bundleRun struct {
	f        *hostFixture
	core     *offlineCore
	cmd      Command
	payload  string
	cur, sel *generationtest.Release
	out      bytes.Buffer
}

func newBundleRun(t *testing.T) *bundleRun {
	f := newHostFixture(t)
	for _, d := range []string{"run/systemd/system", "var/run"} {
		if err := os.MkdirAll(filepath.Join(f.host.Root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sock := filepath.Join(f.host.Root, "var/run/docker.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	os.Chown(sock, 0, 4242)
	os.Chmod(sock, 0o660)

	r := &bundleRun{f: f, core: newOfflineCore(t), cur: generationtest.BuildRelease(t, generationtest.CommitA),
		sel: generationtest.BuildRelease(t, generationtest.CommitB)}
	spec := r.sel.Spec(t, release.ProviderDocker, 2)
	raw, _ := spec.MarshalJSON()
	r.core.conf, _ = json.Marshal(map[string]any{
		"installation_id": generationtest.InstallationID, "provider": "docker", "core_url": r.core.srv.URL, "generation": 1,
		"specification": json.RawMessage(raw), "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4,
	})
	r.payload = filepath.Join(f.base, "payload")
	for _, rel := range []*generationtest.Release{r.cur, r.sel} {
		if err := console.Publish(r.payload, console.ReleaseFiles{Files: rel.Files, Artifacts: rel.Artifacts}); err != nil {
			t.Fatal(err)
		}
	}
	if err := console.Activate(r.payload, r.cur.Commit); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(r.core.srv.Certificate())
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.core.srv.Certificate().Raw})
	real := f.env.Runner
	// The fixture's node program does not connect: Core's readiness is
	// answered here; every other step runs in the real child.
	child := func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		if req.Step == string(workflow.InstallWaitReady) {
			return asaccount.Answer{Outcome: workflow.Done, Facts: map[string]string{"node_id": generationtest.NodeID}}, nil
		}
		return real(ctx, req)
	}
	r.cmd = Command{
		Options: Options{InstallationID: generationtest.InstallationID, SourceURL: r.core.srv.URL, CoreURL: r.core.srv.URL,
			Provider: "docker", CoreCA: ca, Bundle: filepath.Join(f.base, "bundle")},
		Host: f.host, Token: bundleToken, Machine: "x86_64", Core: CoreReader{Roots: trust.Only(pool)},
		Engine: bundleEngine{fileEngineOf(f.host.Home())}, Accounts: f.accts, Systemd: f.systemd, Child: child,
		Version: "test", Out: &r.out,
	}
	return r
}

// writeBundle writes the bundle from the console payload with the other
// releases given.
func (r *bundleRun) writeBundle(t *testing.T, others ...string) string {
	t.Helper()
	res, err := console.WriteBundle(r.payload, r.cmd.Options.Bundle, others)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Missing) > 0 {
		t.Fatalf("the payload lacks %v", res.Missing)
	}
	return r.cmd.Options.Bundle
}

func (r *bundleRun) artifact(rel *generationtest.Release, p string) string {
	dir := r.cmd.Options.Bundle
	if rel != r.cur {
		dir = filepath.Join(dir, "releases", rel.Commit)
	}
	return filepath.Join(dir, "artifacts", rel.Manifest.Artifacts[p].Filename)
}

func TestInstallFromBundle(t *testing.T) {
	r := newBundleRun(t)
	r.writeBundle(t, r.sel.Commit)
	rep, err := Run(context.Background(), r.cmd)
	if err != nil {
		t.Fatalf("%v\n%s", err, r.out.String())
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("condition %s", rep.Condition)
	}
	if n := r.core.consoleRequests(); n != 0 {
		t.Errorf("%d requests for node files went to the console", n)
	}
	root := r.f.host.NodeRoot(generationtest.InstallationID)
	for rel, want := range map[string][]byte{
		release.PathNode:         r.cur.Bytes[release.PathNode],
		release.PathRuntimeImage: r.sel.Bytes[release.PathRuntimeImage],
		release.PathSeccomp:      r.sel.Bytes[release.PathSeccomp],
	} {
		got, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %v (%d bytes, want %d)", rel, err, len(got), len(want))
		}
	}
	ra, err := os.ReadFile(filepath.Join(root, "runtime-artifacts.json"))
	if err != nil || !strings.Contains(string(ra), `"source_commit": "`+r.sel.Commit+`"`) {
		t.Errorf("runtime-artifacts.json: %v\n%s", err, ra)
	}
	st, err := fileEngineOf(r.f.host.Home()).State()
	if err != nil || st.Loads != 1 || len(st.Images) != 1 || st.Images[0].ConfigDigest != r.sel.Image.ConfigDigest {
		t.Errorf("engine: %+v %v", st, err)
	}
	if !strings.Contains(r.out.String(), "Node installation complete.") {
		t.Errorf("output:\n%s", r.out.String())
	}
}

// Every refusal of a bundle comes before the first change: the host root
// and the engine are as they were, and no node file was asked of the
// console.
func TestInstallFromBundleRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, r *bundleRun)
		want  string
	}{
		{"relative path", func(t *testing.T, r *bundleRun) { r.cmd.Options.Bundle = "bundle" }, "is not an absolute path"},
		{"missing", func(t *testing.T, r *bundleRun) { r.cmd.Options.Bundle += "-missing" }, "does not exist"},
		{"not a directory", func(t *testing.T, r *bundleRun) {
			r.cmd.Options.Bundle = r.artifact(r.cur, release.PathNode)
		}, "not a directory"},
		{"symbolic link", func(t *testing.T, r *bundleRun) {
			link := r.cmd.Options.Bundle + "-link"
			os.Symlink(r.cmd.Options.Bundle, link)
			r.cmd.Options.Bundle = link
		}, "is a symbolic link"},
		{"writable by others", func(t *testing.T, r *bundleRun) { os.Chmod(r.cmd.Options.Bundle, 0o757) }, "writable by group or others"},
		{"parent writable by group", func(t *testing.T, r *bundleRun) {
			os.Chmod(filepath.Dir(r.cmd.Options.Bundle), 0o775)
		}, "writable by group or others"},
		{"file writable by others", func(t *testing.T, r *bundleRun) {
			os.Chmod(r.artifact(r.sel, release.PathRuntimeImage), 0o666)
		}, "has bits 0022 set"},
		{"foreign owner", func(t *testing.T, r *bundleRun) {
			os.Chown(r.artifact(r.cur, release.PathNode), 4321, 4321)
		}, "owner uid 4321"},
		{"foreign directory owner", func(t *testing.T, r *bundleRun) {
			os.Chown(filepath.Join(r.cmd.Options.Bundle, "releases", r.sel.Commit), 4321, 4321)
		}, "owner uid 4321"},
		{"file is a link", func(t *testing.T, r *bundleRun) {
			p := r.artifact(r.cur, release.PathNode)
			os.Rename(p, p+".real")
			os.Symlink(filepath.Base(p)+".real", p)
		}, "symbolic link"},
		{"unreadable by the account", func(t *testing.T, r *bundleRun) {
			os.Chmod(r.artifact(r.sel, release.PathRuntimeImage), 0o600)
		}, "cannot read"},
		{"directory not searchable by the account", func(t *testing.T, r *bundleRun) {
			os.Chmod(filepath.Join(r.cmd.Options.Bundle, "releases"), 0o700)
		}, "cannot read"},
		{"missing artifact", func(t *testing.T, r *bundleRun) {
			os.Remove(r.artifact(r.sel, release.PathRuntimeImage))
		}, "is missing"},
		{"missing seccomp profile", func(t *testing.T, r *bundleRun) {
			os.Remove(filepath.Join(r.cmd.Options.Bundle, "releases", r.sel.Commit, release.PathSeccomp))
		}, "is missing"},
		{"checksum mismatch", func(t *testing.T, r *bundleRun) {
			p := r.artifact(r.cur, release.PathNode)
			b, _ := os.ReadFile(p)
			b[len(b)-2] ^= 1
			os.WriteFile(p, b, 0o644)
		}, "has sha256"},
		{"size mismatch", func(t *testing.T, r *bundleRun) {
			p := r.artifact(r.sel, release.PathRuntimeImage)
			f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{0})
			f.Close()
		}, "holds"},
		{"seccomp checksum mismatch", func(t *testing.T, r *bundleRun) {
			os.WriteFile(filepath.Join(r.cmd.Options.Bundle, "releases", r.sel.Commit, release.PathSeccomp), []byte("{}\n"), 0o644)
		}, "has sha256"},
		{"manifest disagrees with SHA256SUMS", func(t *testing.T, r *bundleRun) {
			p := filepath.Join(r.cmd.Options.Bundle, "releases", r.sel.Commit, release.ManifestName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, '\n'), 0o644)
		}, "SHA256SUMS lists"},
		{"metadata not strict JSON", func(t *testing.T, r *bundleRun) {
			dir := r.cmd.Options.Bundle
			m := []byte(strings.Replace(string(r.cur.Files[release.ManifestName]), "{", `{"platform": "linux/amd64",`, 1))
			sums, _ := release.Sums{release.ManifestName: release.SHA256Hex(m), release.SeccompName: release.SHA256Hex(r.cur.Files[release.SeccompName])}.Marshal()
			os.WriteFile(filepath.Join(dir, release.ManifestName), m, 0o644)
			os.WriteFile(filepath.Join(dir, release.SumsName), sums, 0o644)
		}, "platform"},
		{"missing selected release", func(t *testing.T, r *bundleRun) {
			os.RemoveAll(filepath.Join(r.cmd.Options.Bundle, "releases", r.sel.Commit))
		}, "holds only the Runtime of release " + generationtest.CommitA},
		{"only a different Runtime", func(t *testing.T, r *bundleRun) {
			os.RemoveAll(r.cmd.Options.Bundle)
			r.writeBundle(t)
		}, "Core selected the Runtime of release " + generationtest.CommitB},
		{"another release under the selected name", func(t *testing.T, r *bundleRun) {
			dir := filepath.Join(r.cmd.Options.Bundle, "releases", r.sel.Commit)
			os.RemoveAll(dir)
			copyReleaseFiles(t, r.cmd.Options.Bundle, dir)
		}, "not " + generationtest.CommitB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBundleRun(t)
			r.writeBundle(t, r.sel.Commit)
			tc.setup(t, r)
			host := treetest.Snapshot(t, r.f.host.Root, treetest.Options{})
			engine := treetest.Snapshot(t, filepath.Join(r.f.base, "engine"), treetest.Options{})
			_, err := Run(context.Background(), r.cmd)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(workflow.Message(err), "Nothing was changed.") {
				t.Fatalf("error %v, want %q ending in \"Nothing was changed.\"", err, tc.want)
			}
			if d := generationtest.DiffHost(host, treetest.Snapshot(t, r.f.host.Root, treetest.Options{})); d != "" {
				t.Errorf("the host root changed:\n%s", d)
			}
			if d := treetest.Diff(engine, treetest.Snapshot(t, filepath.Join(r.f.base, "engine"), treetest.Options{})); d != "" {
				t.Errorf("the engine changed:\n%s", d)
			}
			if n := r.core.consoleRequests(); n != 0 {
				t.Errorf("%d requests for node files went to the console", n)
			}
		})
	}
}

// copyReleaseFiles copies the release files at the top of a bundle (not
// its releases/) to dst, root's and 0644.
func copyReleaseFiles(t *testing.T, bundle, dst string) {
	t.Helper()
	for _, rel := range []string{release.ManifestName, release.SumsName, release.SeccompName} {
		data, err := os.ReadFile(filepath.Join(bundle, rel))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(dst, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The service account verifies the bytes again as it copies them: a
// bundle file changed after root's check is never published on the node.
func TestInstallFromBundleChangedAfterTheCheck(t *testing.T) {
	r := newBundleRun(t)
	r.writeBundle(t, r.sel.Commit)
	img := r.artifact(r.sel, release.PathRuntimeImage)
	child := r.cmd.Child
	r.cmd.Child = func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		if req.Step == string(workflow.InstallDownloads) {
			b, _ := os.ReadFile(img)
			b[len(b)/2] ^= 1
			if err := os.WriteFile(img, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return child(ctx, req)
	}
	rep, err := Run(context.Background(), r.cmd)
	if err == nil && rep.Condition == workflow.Complete {
		t.Fatal("the installation completed from a changed bundle")
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if rep != nil && rep.LastError != nil {
		msg += " " + rep.LastError.Error
	}
	if !strings.Contains(msg, "checksum mismatch") {
		t.Errorf("error %q, report %+v: want a checksum mismatch", msg, rep)
	}
	root := r.f.host.NodeRoot(generationtest.InstallationID)
	entries, _ := os.ReadDir(filepath.Join(root, "images"))
	if len(entries) != 0 {
		t.Errorf("the node root's images/ holds %v", entries)
	}
	if n := r.core.consoleRequests(); n != 0 {
		t.Errorf("%d requests for node files went to the console", n)
	}
}

// The account reads what its groups let it read: the provider's device
// group counts before the account exists, another group does not, and the
// service-account child then reads the file as the check said.
func TestBundleCheckReadableThroughTheDeviceGroup(t *testing.T) {
	r := newBundleRun(t)
	r.writeBundle(t, r.sel.Commit)
	img := r.artifact(r.sel, release.PathRuntimeImage)
	os.Chmod(img, 0o640)
	var conf struct {
		Specification json.RawMessage `json:"specification"`
	}
	json.Unmarshal(r.core.conf, &conf)
	spec, err := release.ParseSpecification(release.ProviderDocker, conf.Specification)
	if err != nil {
		t.Fatal(err)
	}
	check := &BundleCheck{Dir: r.cmd.Options.Bundle, Provider: release.ProviderDocker, Spec: spec, Host: r.f.host}
	os.Chown(img, 0, 4242) // docker
	if c := check.Run(); c.Failed() {
		t.Fatalf("readable through the docker group: %v", c.Err)
	}
	os.Chown(img, 0, 4343)
	if c := check.Run(); !c.Failed() || !strings.Contains(c.Err.Error(), "cannot read") {
		t.Fatalf("readable only by another group: %v", c.Err)
	}
	// The check's view is the child's: through the docker group the
	// service account copies the file.
	os.Chown(img, 0, 4242)
	rep, err := Run(context.Background(), r.cmd)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("install: %v %+v", err, rep)
	}
}
