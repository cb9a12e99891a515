package install

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/fakehost"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The service-account child of these tests finds its fake engine and
// registrar beside the test host: <base>/engine, where the host root is
// <base>/host and the account's home <base>/host/var/lib/oac-node.
func engineDir(home string) string { return fakehost.EngineDir(home) }

// fileEngineOf is the engine the child and the test share.
func fileEngineOf(home string) *dockertest.FileEngine {
	return &dockertest.FileEngine{Path: filepath.Join(engineDir(home), "state.json")}
}

// fileRegistrar writes identity.json as the node program does and counts
// its registrations in <engine>/registrations.
type fileRegistrar struct{ dir string }

func fileRegistrarOf(home string) fileRegistrar { return fileRegistrar{dir: engineDir(home)} }

func (r fileRegistrar) Register(_ context.Context, req RegisterRequest) (err error) {
	if fi, err := os.Lstat(req.TokenFile); err != nil || fi.Mode().Perm() != 0o600 {
		return fmt.Errorf("token file: %v %v", fi, err)
	}
	if err := os.Remove(filepath.Join(r.dir, "fail-register")); err == nil {
		return errors.New("the node program could not reach Core")
	}
	if err := os.Remove(filepath.Join(r.dir, "mismatch-register")); err == nil {
		return &RegistrationRejected{Status: 409, Code: CodeAddressMismatch}
	}
	// As oac-node register does with an identity it wrote before: Core
	// knows the node (this fake's registrations), so the answer is
	// recovered without enrolling again.
	if _, err := os.Lstat(filepath.Join(req.StateDir, "identity.json")); err == nil {
		if data, _ := os.ReadFile(filepath.Join(r.dir, "registrations")); len(data) > 0 {
			return nil
		}
	}
	// The answer is lost after Core enrolled the node: the identity is
	// written, the registration counted, and the node program fails.
	lose := os.Remove(filepath.Join(r.dir, "lose-register-answer")) == nil
	defer func() {
		if lose {
			err = errors.New("the connection to Core was lost before its answer")
		}
	}()
	f, err := os.OpenFile(filepath.Join(r.dir, "registrations"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	f.WriteString("registered\n")
	f.Close()
	// The identity oac-node register writes, for the enrolled generation of
	// installation.json.
	var inst struct {
		Provider            string `json:"provider"`
		Generation          int64  `json:"generation"`
		SpecificationDigest string `json:"specification_digest"`
	}
	data, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(req.StateDir)), "installation.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &inst); err != nil {
		return err
	}
	nid := map[string]any{
		"identity": map[string]any{"specification_digest": inst.SpecificationDigest, "deployment_generation": inst.Generation,
			"node_id": generationtest.NodeID, "installation_id": generationtest.InstallationID, "provider": inst.Provider,
			"backend_fingerprint": strings.Repeat("f", 64), "max_active": 2, "max_retained": 4},
		"credential": generationtest.Credential, "core_url": req.CoreURL, "owner_epoch": 1,
	}
	if req.AllowInsecureOrigin {
		nid["allow_insecure_origin"] = true
	}
	if req.CoreCA != "" {
		ca, err := os.ReadFile(req.CoreCA)
		if err != nil {
			return err
		}
		nid["core_ca"], nid["core_ca_sha256"] = req.CoreCA, release.SHA256Hex(ca)
	}
	idb, _ := json.MarshalIndent(nid, "", "  ")
	return os.WriteFile(filepath.Join(req.StateDir, "identity.json"), append(idb, '\n'), 0o600)
}

func mustPool(ca []byte) *x509.CertPool {
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(ca)
	return p
}

// hostFixture is a host root with the fakes around a real privsep child.
type hostFixture struct {
	base    string
	host    layout.Host
	env     *Env
	systemd *systemdtest.Fake
	accts   *accountstest.Fake
	journal string
}

func newHostFixture(t *testing.T) *hostFixture {
	h := fakehost.New(t, "oac-install-host-", "etc/systemd/system", "var/lib", "run", "engine")
	base, host, accts, sd, dbs := h.Base, h.Host, h.Accounts, h.Systemd, h.DBs

	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	srv := generationtest.NewServer(t, rel)
	for _, name := range []string{release.ManifestName, release.SumsName} {
		data := rel.Files[name]
		srv.Serve("/node-install/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	}
	spec := rel.Spec(t, release.ProviderDocker, 2)
	raw, _ := spec.MarshalJSON()
	confRaw, _ := json.Marshal(map[string]any{
		"installation_id": generationtest.InstallationID, "provider": "docker", "core_url": srv.URL, "generation": 1,
		"specification": json.RawMessage(raw), "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4,
	})
	conf, err := core.ParseConfiguration(confRaw)
	if err != nil {
		t.Fatal(err)
	}
	env := &Env{
		Opts:      Options{InstallationID: generationtest.InstallationID, SourceURL: srv.URL, CoreURL: srv.URL, CoreCA: srv.CA},
		HostPaths: host, Conf: conf, ConfRaw: confRaw, Tok: "enroll-3c9e1f7a22",
		Adapter: accts, DBs: dbs, Manager: sd, Locked: true,
		Runner: children(t, privsep.Options{Binary: h.Binary, Home: host.Home()}, dbs),
	}
	return &hostFixture{base: base, host: host, env: env, systemd: sd, accts: accts,
		journal: filepath.Join(host.JournalDir(generationtest.InstallationID), "install.journal")}
}

func (f *hostFixture) run(t *testing.T) (*workflow.Report, error) {
	t.Helper()
	steps := Steps(f.env)
	steps[workflow.InstallWaitReady] = rootStub{} // the fixture's Core has no identity route
	if err := os.MkdirAll(filepath.Dir(f.journal), 0o700); err != nil {
		t.Fatal(err)
	}
	r := &workflow.Runner{Def: workflow.InstallDefinition(), Steps: steps, Journal: f.journal,
		Binding: workflow.Binding{Version: "test", InstallationID: generationtest.InstallationID}}
	return r.Run(context.Background())
}

func TestInstallWorkflowWithAServiceAccountChild(t *testing.T) {
	f := newHostFixture(t)
	rep, err := f.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("condition %s", rep.Condition)
	}
	u, err := f.env.DBs.LookupUser(layout.Account)
	if err != nil {
		t.Fatal(err)
	}
	root := f.host.NodeRoot(generationtest.InstallationID)
	for _, rel := range []string{"provider.json", "registered.json", "generation-preparer", "generation-preparer.pyz", "state/node/identity.json"} {
		var st = new(statT)
		if err := lstat(filepath.Join(root, rel), st); err != nil || st.uid != u.UID {
			t.Errorf("%s: owner %d, want the account %d (%v)", rel, st.uid, u.UID, err)
		}
	}
	unit, err := os.ReadFile(f.host.Unit(generationtest.InstallationID))
	if err != nil || !bytes.Contains(unit, []byte("User=oac-node")) {
		t.Fatalf("unit: %v\n%s", err, unit)
	}
	if !f.systemd.Enabled(layout.UnitName(generationtest.InstallationID)) {
		t.Error("the unit is not enabled")
	}
	rec, err := os.ReadFile(f.host.Record(generationtest.InstallationID))
	if err != nil || !strings.Contains(string(rec), `"node_root": "`+root+`"`) {
		t.Errorf("host record: %v %s", err, rec)
	}
	db, err := bookkeeping.Open(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	acct, ok, _ := db.Account()
	groups, _ := db.Groups()
	files, _ := db.Files(generationtest.InstallationID)
	db.Close()
	if !ok || !acct.Created || acct.UID != u.UID || len(groups) != 1 || groups[0].Name != "docker" || len(files) != 3 || files[0].Kind != bookkeeping.FileCoreCA {
		t.Errorf("bookkeeping: account %+v groups %+v files %+v", acct, groups, files)
	}
	if data, _ := os.ReadFile(f.journal); bytes.Contains(data, []byte(f.env.Tok)) {
		t.Error("the journal holds the token")
	}
	if regs, _ := os.ReadFile(filepath.Join(f.base, "engine", "registrations")); strings.Count(string(regs), "\n") != 1 {
		t.Errorf("registrations: %q", regs)
	}
}

// children is the real child runner, its session ended when the test ends.
func children(t *testing.T, base privsep.Options, dbs accounts.Databases) asaccount.Runner {
	c := asaccount.NewChildren(base, dbs)
	t.Cleanup(func() { c.Close() })
	return c.Run
}
