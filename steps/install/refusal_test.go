package install

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

const otherID = "11111111-2222-4333-8444-555555555555"

// infoEngine answers Info with its own facts.
type infoEngine struct {
	*dockertest.FileEngine
	info docker.HostInfo
}

func (e infoEngine) Info(context.Context) (docker.HostInfo, error) { return e.info, nil }

// refusalCase is one refusal install can make: setup prepares the host
// (after a first installation when registered is set), edit the command.
type refusalCase struct {
	name       string
	registered bool
	setup      func(t *testing.T, f *runFixture)
	edit       func(f *runFixture, c *Command)
	want       string
}

func writeHostFile(t *testing.T, f *runFixture, rel string, data string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(f.host.Root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
}

// nodeFile rewrites a file of the node root as the account owns it.
func nodeFile(t *testing.T, f *runFixture, rel, data string, mode os.FileMode) {
	t.Helper()
	p := filepath.Join(f.host.NodeRoot(generationtest.InstallationID), rel)
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Dir(p), &st); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, mode)
	os.Chown(p, int(st.Uid), int(st.Gid))
}

func editRecord(t *testing.T, f *runFixture, edit func(map[string]any)) {
	t.Helper()
	p := f.host.Record(generationtest.InstallationID)
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	edit(m)
	out, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func coreAnswers(status int, body []byte) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(status)
		w.Write(body)
		return true
	}
}

func refusalCases() []refusalCase {
	microsandbox := func(t *testing.T, f *runFixture) {
		rel := generationtest.BuildRelease(t, generationtest.CommitA)
		f.spec = rel.Spec(t, release.ProviderMicrosandbox, 2)
	}
	return []refusalCase{
		{name: "not amd64", edit: func(f *runFixture, c *Command) { c.Machine = "aarch64" }, want: "linux/amd64"},
		{name: "systemd not running", setup: func(t *testing.T, f *runFixture) {
			os.Remove(filepath.Join(f.host.Root, "run/systemd/system"))
		}, want: "systemd is not running"},
		{name: "systemd older than the unit needs", setup: func(t *testing.T, f *runFixture) {
			f.systemd.SetVersion("239 (239-82.el8)")
		}, want: "this host runs systemd 239 (239 (239-82.el8)); the node's unit needs systemd 242 or later"},
		{name: "systemd 241", setup: func(t *testing.T, f *runFixture) {
			f.systemd.SetVersion("241.7-2")
		}, want: "needs systemd 242 or later"},
		{name: "SELinux enforcing", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "sys/fs/selinux/enforce", "1\n", 0o644)
		}, want: "SELinux is enforcing"},
		{name: "token in the environment", edit: func(f *runFixture, c *Command) {
			c.Environ = []string{"OAC_ENROLLMENT_TOKEN=x"}
		}, want: "OAC_ENROLLMENT_TOKEN"},
		{name: "docker socket of group root", setup: func(t *testing.T, f *runFixture) {
			os.Chown(filepath.Join(f.host.Root, "var/run/docker.sock"), 0, 0)
		}, want: "belongs to group root"},
		{name: "docker socket not group read-write", setup: func(t *testing.T, f *runFixture) {
			os.Chmod(filepath.Join(f.host.Root, "var/run/docker.sock"), 0o600)
		}, want: "not group read-write"},
		{name: "no docker socket", setup: func(t *testing.T, f *runFixture) {
			os.Remove(filepath.Join(f.host.Root, "var/run/docker.sock"))
		}, want: "Docker is not installed or not running"},
		{name: "engine without CPU quota", edit: func(f *runFixture, c *Command) {
			c.Engine = infoEngine{f.engine, docker.HostInfo{NCPU: 8, MemTotal: 16 << 30, MemoryLimit: true}}
		}, want: "cannot limit containers' CPU and memory"},
		{name: "engine without memory limit", edit: func(f *runFixture, c *Command) {
			c.Engine = infoEngine{f.engine, docker.HostInfo{NCPU: 8, MemTotal: 16 << 30, CPUCfsQuota: true}}
		}, want: "cannot limit containers' CPU and memory"},
		{name: "rootless docker", edit: func(f *runFixture, c *Command) {
			c.Engine = infoEngine{f.engine, docker.HostInfo{NCPU: 8, MemTotal: 16 << 30, MemoryLimit: true, CPUCfsQuota: true, Rootless: true}}
		}, want: "rootless Docker"},
		{name: "capacity", edit: func(f *runFixture, c *Command) {
			c.Engine = infoEngine{f.engine, docker.HostInfo{NCPU: 1, MemTotal: 16 << 30, MemoryLimit: true, CPUCfsQuota: true}}
		}, want: "each sandbox needs 2 CPUs"},
		{name: "kvm of group root", setup: func(t *testing.T, f *runFixture) {
			microsandbox(t, f)
			os.MkdirAll(filepath.Join(f.host.Root, "dev"), 0o755)
			if err := syscall.Mknod(filepath.Join(f.host.Root, "dev/kvm"), syscall.S_IFCHR|0o660, int(10<<8|232)); err != nil {
				t.Skipf("mknod: %v", err)
			}
		}, want: "/dev/kvm belongs to group root"},
		{name: "no kvm", setup: microsandbox, want: "KVM is not available"},
		{name: "microsandbox store path too long", setup: func(t *testing.T, f *runFixture) {
			microsandbox(t, f)
			os.MkdirAll(filepath.Join(f.host.Root, "dev"), 0o755)
			if err := syscall.Mknod(filepath.Join(f.host.Root, "dev/kvm"), syscall.S_IFCHR|0o666, int(10<<8|232)); err != nil {
				t.Skipf("mknod: %v", err)
			}
			os.Chmod(filepath.Join(f.host.Root, "dev/kvm"), 0o666)
		}, want: "short enough for the store's socket paths"},
		{name: "another Core's node on the host", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/oac-node/"+otherID+".json", "{}\n", 0o644)
		}, want: "node of another Core"},
		{name: "original installer's account.json", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/oac-node/account.json", "{}\n", 0o644)
		}, want: "account.json"},
		{name: "network of this installation exists", setup: func(t *testing.T, f *runFixture) {
			st := f.engineState(t)
			st.Nets["oac-node-"+generationtest.InstallationID] = map[string]string{}
			f.engine.Save(st)
		}, want: "Docker network oac-node-" + generationtest.InstallationID + " exists"},
		{name: "older product's unit", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/systemd/system/parsar-node-"+generationtest.InstallationID+".service", "[Unit]\n", 0o644)
		}, want: "previous installer"},
		{name: "older product's record", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/parsar-node/"+generationtest.InstallationID+".json", "{}\n", 0o644)
		}, want: "previous installer"},
		{name: "older product's node root", setup: func(t *testing.T, f *runFixture) {
			os.MkdirAll(filepath.Join(f.host.Home(), ".parsar", "nodes", generationtest.InstallationID), 0o700)
		}, want: "previous installer"},
		{name: "account with a login shell", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/passwd", "root:x:0:0::/root:/bin/sh\noac-node:x:990:990::/var/lib/oac-node:/bin/bash\n", 0o644)
			writeHostFile(t, f, "etc/group", "root:x:0:\ndocker:x:4242:\noac-node:x:990:\n", 0o644)
		}, want: "login shell"},
		{name: "account with another home", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/passwd", "root:x:0:0::/root:/bin/sh\noac-node:x:990:990::/home/oac-node:/usr/sbin/nologin\n", 0o644)
			writeHostFile(t, f, "etc/group", "root:x:0:\ndocker:x:4242:\noac-node:x:990:\n", 0o644)
		}, want: "not /var/lib/oac-node"},
		{name: "orphan home", setup: func(t *testing.T, f *runFixture) {
			os.MkdirAll(f.host.Home(), 0o755)
		}, want: "/var/lib/oac-node"},
		{name: "SUDO_USER's home holds the node", setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n", 0o644)
			os.MkdirAll(filepath.Join(f.host.Root, "home/alice/.oac/nodes", generationtest.InstallationID), 0o700)
		}, edit: func(f *runFixture, c *Command) { c.Environ = []string{"SUDO_USER=alice"} }, want: ".oac/nodes/" + generationtest.InstallationID},
		{name: "proxy value with a newline", edit: func(f *runFixture, c *Command) {
			c.Proxy = proxy.FromEnviron([]string{"https_proxy=http://proxy.example.com:3128\nX=1", "HTTPS_PROXY=http://proxy.example.com:3128\nX=1"})
		}, want: "line break"},
		{name: "registered: proxy value with a newline", registered: true, edit: func(f *runFixture, c *Command) {
			c.Proxy = proxy.FromEnviron([]string{"https_proxy=http://proxy.example.com:3128\nX=1", "HTTPS_PROXY=http://proxy.example.com:3128\nX=1"})
		}, want: "line break"},
		{name: "no token for a new node", edit: func(f *runFixture, c *Command) { c.Token = "" }, want: "enrollment token"},
		{name: "Core unreachable", edit: func(f *runFixture, c *Command) {
			c.Options.CoreURL, c.Options.SourceURL = "https://127.0.0.1:1", "https://127.0.0.1:1"
		}, want: "cannot be reached"},
		{name: "Core's certificate not trusted", edit: func(f *runFixture, c *Command) {
			c.Core.Roots = trust.Only(x509.NewCertPool())
		}, want: "not trusted"},
		{name: "Core 401", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(401, nil))
		}, want: "HTTP 401"},
		{name: "Core 404", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(404, nil))
		}, want: "HTTP 404"},
		{name: "Core 409", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(409, nil))
		}, want: "HTTP 409"},
		{name: "Core 503", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(503, nil))
		}, want: "HTTP 503"},
		{name: "Core's public URL changed", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(200, f.configurationBody(func(m map[string]any) { m["core_url"] = "https://core.example.com" })))
		}, want: "public URL changed"},
		{name: "Core answers for another installation", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(200, f.configurationBody(func(m map[string]any) { m["installation_id"] = otherID })))
		}, want: "Core answered for installation " + otherID},
		{name: "provider assertion", edit: func(f *runFixture, c *Command) { c.Options.Provider = "microsandbox" }, want: "this command says microsandbox"},
		{name: "max_active above max_retained", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(200, f.configurationBody(func(m map[string]any) { m["max_active"] = 5 })))
		}, want: "max_retained"},
		{name: "digest that is not the specification's", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(200, f.configurationBody(func(m map[string]any) { m["specification_digest"] = strings.Repeat("0", 64) })))
		}, want: "Core's node configuration"},
		{name: "answer too large", setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(200, make([]byte, 20000)))
		}, want: "larger than"},

		// A registered node.
		{name: "registered: different Core address", registered: true, edit: func(f *runFixture, c *Command) {
			c.Options.CoreURL = "https://core.example.com"
		}, want: "remove the node and add it again"},
		{name: "registered: insecure-origin policy", registered: true, edit: func(f *runFixture, c *Command) {
			c.Options.AllowInsecureOrigin = true
		}, want: "--allow-insecure-origin"},
		{name: "registered: different Core CA", registered: true, edit: func(f *runFixture, c *Command) {
			c.Options.CoreCA = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
		}, want: "installed with a different Core CA (sha256 "},
		{name: "registered: no Core CA", registered: true, edit: func(f *runFixture, c *Command) { c.Options.CoreCA = nil },
			want: "installed with --core-ca (a CA bundle with sha256 "},
		{name: "registered: no Core CA, the node's copy named", registered: true, edit: func(f *runFixture, c *Command) { c.Options.CoreCA = nil },
			want: "from a directory only root can write; once root keeps its copy (/etc/oac-node/"},
		{name: "registered: no Core CA, the copy's path", registered: true, edit: func(f *runFixture, c *Command) { c.Options.CoreCA = nil },
			want: generationtest.InstallationID + ".core-ca.pem) a rerun needs no --core-ca"},
		{name: "registered: provider assertion", registered: true, edit: func(f *runFixture, c *Command) { c.Options.Provider = "microsandbox" },
			want: "this command says --provider microsandbox: rerun it with --provider docker"},
		{name: "registered: record of another installation", registered: true, setup: func(t *testing.T, f *runFixture) {
			editRecord(t, f, func(m map[string]any) { m["installation_id"] = otherID })
		}, want: otherID},
		{name: "registered: record that is not JSON", registered: true, setup: func(t *testing.T, f *runFixture) {
			writeHostFile(t, f, "etc/oac-node/"+generationtest.InstallationID+".json", "{", 0o644)
		}, want: "not valid JSON"},
		{name: "registered: bookkeeping disagrees with the record", registered: true, setup: func(t *testing.T, f *runFixture) {
			db, err := bookkeeping.Open(f.host.Bookkeeping())
			if err != nil {
				t.Fatal(err)
			}
			inst, err := db.GetInstallation(generationtest.InstallationID)
			if err == nil {
				inst.CoreURL = "https://core.example.com"
				err = db.PutInstallation(inst)
			}
			db.Close()
			if err != nil {
				t.Fatal(err)
			}
		}, want: "bookkeeping"},
		{name: "registered: identity.json not valid", registered: true, setup: func(t *testing.T, f *runFixture) {
			nodeFile(t, f, "state/node/identity.json", "{}\n", 0o600)
		}, want: "invalid node identity"},
		{name: "registered: no token, Core 401 to the credential", registered: true, setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(401, nil))
		}, want: "HTTP 401"},
		{name: "registered: Core no longer serves the node's generation (409)", registered: true, setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(409, nil))
		}, want: "Core no longer serves generation 1, the one this node was installed with, and a rerun installs only that generation: waiting or rerunning does not change it"},
		{name: "registered: 409, what to do", registered: true, setup: func(t *testing.T, f *runFixture) {
			f.setCoreReply(coreAnswers(409, nil))
		}, want: "run sudo oac-node-install --uninstall --installation-id " + generationtest.InstallationID + ", then add the host with a new command"},
		{name: "registered: Core's configuration for another deployment", registered: true, setup: func(t *testing.T, f *runFixture) {
			rel := generationtest.BuildRelease(t, generationtest.CommitA)
			other := rel.Spec(t, release.ProviderDocker, 1)
			f.setCoreReply(func(w http.ResponseWriter, r *http.Request) bool {
				spec := f.spec
				f.spec = other
				w.Write(f.configurationBody(nil))
				f.spec = spec
				return true
			})
		}, want: "not the one this node enrolled with"},
		{name: "registered: different node program, newer installer", registered: true, setup: func(t *testing.T, f *runFixture) {
			nodeFile(t, f, "native/bin/oac-node", "#!/bin/sh\nexit 0\n", 0o700)
		}, edit: func(f *runFixture, c *Command) { c.Version = "test-2" }, want: "remove the node in Web, run this command with --uninstall, then add the node again"},
		{name: "registered: different helper", registered: true, setup: func(t *testing.T, f *runFixture) {
			nodeFile(t, f, layout.HelperFile, "another installer", 0o700)
		}, want: "keeps the installer it was installed with"},
		{name: "registered: different helper launcher", registered: true, setup: func(t *testing.T, f *runFixture) {
			nodeFile(t, f, layout.HelperLauncherFile, "PK another launcher", 0o600)
		}, want: "keeps the installer it was installed with"},
		{name: "registered: registered.json differs", registered: true, setup: func(t *testing.T, f *runFixture) {
			nodeFile(t, f, "registered.json", "{}\n", 0o600)
		}, want: "registered.json differs"},
		{name: "registered: installation.json differs", registered: true, setup: func(t *testing.T, f *runFixture) {
			nodeFile(t, f, "installation.json", "{}\n", 0o600)
		}, want: "registered for another deployment"},
		{name: "registered: provider.json differs", registered: true, setup: func(t *testing.T, f *runFixture) {
			nodeFile(t, f, "provider.json", "{}\n", 0o600)
		}, want: "registered with another configuration"},
		{name: "registered: network of another installation", registered: true, setup: func(t *testing.T, f *runFixture) {
			st := f.engineState(t)
			st.Nets["oac-node-"+generationtest.InstallationID] = map[string]string{}
			f.engine.Save(st)
		}, want: "is not labelled"},
		{name: "registered: account's login shell", registered: true, setup: func(t *testing.T, f *runFixture) {
			p := filepath.Join(f.host.Root, "etc/passwd")
			data, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(data), "/usr/sbin/nologin", "/bin/bash", 1)), 0o644)
		}, want: "login shell"},
	}
}

// Every refusal of install.Run leaves /etc, /var/lib (the bookkeeping's
// bytes included) and the engine exactly as they were, calls no adapter
// that changes the host, and says that nothing was changed.
func TestEveryRefusalLeavesTheHostUnchanged(t *testing.T) {
	t.Parallel()
	// The registered cases share one installation, restored before each.
	reg := newRunFixture(t)
	reg.installed(t)
	reg.save(t)
	for _, tc := range refusalCases() {
		t.Run(tc.name, func(t *testing.T) {
			var f *runFixture
			if tc.registered {
				f = reg
				f.restore(t)
			} else {
				f = newRunFixture(t)
			}
			if tc.setup != nil {
				tc.setup(t, f)
			}
			before := f.tree(t, false)
			calls, loads, regs := f.counters(t)
			start := time.Now()
			_, err := f.install(t, func(c *Command) {
				c.Core.Sleeps = []time.Duration{time.Millisecond, time.Millisecond}
				if tc.edit != nil {
					tc.edit(f, c)
				}
			})
			if err == nil {
				t.Fatalf("no refusal (%s)\n%s", time.Since(start), f.out.String())
			}
			msg := workflow.Message(err)
			if !strings.HasSuffix(msg, "Nothing was changed.") {
				t.Errorf("the message does not end with \"Nothing was changed.\": %s", msg)
			}
			if !strings.Contains(msg, tc.want) {
				t.Errorf("the message does not say %q: %s", tc.want, msg)
			}
			if d := generationtest.DiffHost(before, f.tree(t, false)); d != "" {
				t.Errorf("the refusal changed the host:\n%s\n(%s)", d, msg)
			}
			if c, l, r := f.counters(t); c != calls || l != loads || r != regs {
				t.Errorf("the refusal called %v (loads %d->%d, registrations %d->%d)", f.changingCalls()[calls:], loads, l, regs, r)
			}
		})
	}
}

// savedDirs are what save keeps and restore puts back.
func (f *runFixture) savedDirs() []string {
	return []string{filepath.Join(f.host.Root, "etc"), filepath.Join(f.host.Root, "var/lib"), filepath.Join(f.base, "engine")}
}

// save copies the host's /etc and /var/lib and the engine beside them.
func (f *runFixture) save(t *testing.T) {
	t.Helper()
	for _, d := range f.savedDirs() {
		if out, err := exec.Command("cp", "-a", d, d+".saved").CombinedOutput(); err != nil {
			t.Fatalf("cp: %v %s", err, out)
		}
	}
}

// restore puts back what save copied, rewriting in place each file whose
// size or mtime differs (the lease's identity names its inode), and the
// command's defaults. The registered cases' setups only rewrite files.
func (f *runFixture) restore(t *testing.T) {
	t.Helper()
	for _, d := range f.savedDirs() {
		err := filepath.WalkDir(d+".saved", func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.Type().IsRegular() {
				return err
			}
			dst := filepath.Join(d, strings.TrimPrefix(p, d+".saved"))
			want, err := os.Lstat(p)
			if err != nil {
				return err
			}
			if got, err := os.Lstat(dst); err == nil && got.Size() == want.Size() && got.ModTime().Equal(want.ModTime()) && got.Mode() == want.Mode() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(dst, data, want.Mode().Perm()); err != nil {
				return err
			}
			st := want.Sys().(*syscall.Stat_t)
			os.Chmod(dst, want.Mode().Perm())
			os.Lchown(dst, int(st.Uid), int(st.Gid))
			return os.Chtimes(dst, want.ModTime(), want.ModTime())
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	f.setCoreReply(nil)
	f.token, f.version, f.environ, f.machine = "", "test-1", nil, "x86_64"
}
