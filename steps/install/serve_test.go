package install

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/docker/dockertest"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

type registrar struct{ calls int }

func (r *registrar) Register(_ context.Context, req RegisterRequest) error {
	r.calls++
	return os.WriteFile(filepath.Join(req.StateDir, "identity.json"), []byte("{}\n"), 0o600)
}

// fixture runs the install workflow's service-account steps in process,
// with root's steps stubbed.
type fixture struct {
	t       *testing.T
	home    string
	journal string
	srv     *generationtest.Server
	rel     *generationtest.Release
	engine  *dockertest.FileEngine
	reg     *registrar
	conf    json.RawMessage
	token   string
}

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	generationtest.Mkdir(t, home)
	rel := generationtest.BuildRelease(t, generationtest.CommitA)
	srv := generationtest.NewServer(t, rel)
	for _, name := range []string{release.ManifestName, release.SumsName} {
		data := rel.Files[name]
		srv.Serve("/node-install/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(data) })
	}
	spec := rel.Spec(t, release.ProviderDocker, 2)
	raw, _ := spec.MarshalJSON()
	conf, _ := json.Marshal(map[string]any{
		"installation_id": generationtest.InstallationID, "provider": "docker", "core_url": srv.URL, "generation": 1,
		"specification": json.RawMessage(raw), "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4,
	})
	return &fixture{t: t, home: home, journal: filepath.Join(dir, "install.journal"), srv: srv, rel: rel,
		engine: &dockertest.FileEngine{Path: filepath.Join(dir, "engine.json")}, reg: &registrar{}, conf: conf, token: "enroll-7f3a9c51e2"}
}

// ChildInput implements asaccount.Data as Env does: the token only for
// the register step's run.
func (f *fixture) ChildInput(state workflow.State, verify bool) any {
	in := Input{InstallationID: generationtest.InstallationID, SourceURL: f.srv.URL, CoreOrigin: f.srv.URL,
		CoreCA: f.srv.CA, Configuration: f.conf}
	if state == workflow.InstallRegister && !verify {
		in.Token = f.token
	}
	return in
}

// Child implements asaccount.Data: the request crosses a JSON round trip,
// as over the pipe, and runs in process.
func (f *fixture) Child() asaccount.Runner {
	return func(ctx context.Context, req asaccount.Request) (asaccount.Answer, error) {
		body, err := json.Marshal(req) // what crosses the pipe
		if err != nil {
			return asaccount.Answer{}, err
		}
		var got asaccount.Request
		if err := json.Unmarshal(body, &got); err != nil {
			return asaccount.Answer{}, err
		}
		var input Input
		if err := got.DecodeInput(&input); err != nil {
			return asaccount.Answer{}, err
		}
		conf, err := core.ParseConfiguration(input.Configuration)
		if err != nil {
			return asaccount.Answer{}, err
		}
		in := NodeOptions{
			InstallationID: input.InstallationID, Home: f.home, UID: os.Getuid(), SourceURL: input.SourceURL, CoreOrigin: input.CoreOrigin,
			CoreCA: input.CoreCA, Configuration: conf,
			Docker:   func(context.Context, string) (noderoot.Docker, error) { return f.engine, nil },
			Download: download.Options{RetrySleeps: []time.Duration{time.Millisecond}},
			Helper:   func() ([]byte, error) { return []byte("installer"), nil },
			Register: f.reg,
		}
		return RunStep(ctx, in, got)
	}
}

func (f *fixture) runner() *workflow.Runner {
	steps := serviceSteps(f)
	for _, sd := range workflow.InstallDefinition().States {
		if _, ok := steps[sd.Name]; !ok || sd.Name == workflow.InstallWaitReady {
			steps[sd.Name] = rootStub{}
		}
	}
	return &workflow.Runner{Def: workflow.InstallDefinition(), Steps: steps, Journal: f.journal,
		Binding: workflow.Binding{Version: "test", InstallationID: generationtest.InstallationID}}
}

func (f *fixture) root(rel string) string {
	return filepath.Join(f.home, ".oac", "nodes", generationtest.InstallationID, rel)
}

func TestServiceStepsRunTheServiceAccountPhase(t *testing.T) {
	f := newFixture(t)
	rep, err := f.runner().Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("condition %s", rep.Condition)
	}
	for _, rel := range []string{"provider.json", "registered.json", "generation-preparer", "state/node/generations/1.lease-identity"} {
		if _, err := os.Lstat(f.root(rel)); err != nil {
			t.Errorf("%s: %v", rel, err)
		}
	}
	if st, _ := f.engine.State(); f.reg.calls != 1 || st.Loads != 1 {
		t.Errorf("registrations %d, loads %d", f.reg.calls, st.Loads)
	}
	if data, _ := os.ReadFile(f.journal); bytes.Contains(data, []byte(f.token)) {
		t.Error("the journal holds the token")
	}
}

// A load whose answer was cut fails the runtime step; the rerun verifies
// from the engine that the image is there and goes on without loading or
// enrolling again, and a third run finds the journal complete.
func TestServiceStepsVerifyAfterAFailedImport(t *testing.T) {
	f := newFixture(t)
	f.engine.CutNextLoad = true
	if _, err := f.runner().Run(context.Background()); err == nil {
		t.Fatal("the cut load did not fail the run")
	}
	rep, err := f.runner().Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := f.engine.State(); rep.Condition != workflow.Complete || st.Loads != 1 || f.reg.calls != 1 {
		t.Fatalf("condition %s, loads %d, registrations %d", rep.Condition, st.Loads, f.reg.calls)
	}
	rep, err = workflow.InspectJournal(f.journal, workflow.Lookup)
	if err != nil || rep.Condition != workflow.Complete {
		t.Fatalf("inspection after the verified rerun: %v %v", rep, err)
	}
}

// rootStub stands in for a root step: done at once, and verified done.
type rootStub struct{}

func (rootStub) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	return workflow.Result{}, nil
}

func (rootStub) Verify(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return workflow.Done, workflow.Result{}, nil
}
