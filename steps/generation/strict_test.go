package generation

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// prefix inserts members at the start of the JSON object doc.
func prefix(doc []byte, members string) []byte {
	return []byte("{" + members + "," + string(doc[1:]))
}

// encoding/json matched keys without regard to case and kept the last of
// two equal keys, so these documents read as their second value.
func TestRecordsAndAnswersRefuseCaseVariantsAndDuplicates(t *testing.T) {
	sum := strings.Repeat("1", 64)
	artifacts := func(sha string) string {
		return `{"installation_id":"` + testID + `","source_commit":"` + commitA + `","sha256":{` + sha + `}}`
	}
	identity := func() []byte {
		d, _ := json.Marshal(map[string]any{
			"identity": map[string]any{"specification_digest": strings.Repeat("a", 64), "deployment_generation": 1, "node_id": "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6",
				"installation_id": testID, "provider": "docker", "backend_fingerprint": strings.Repeat("f", 64), "max_active": 1, "max_retained": 2},
			"credential": testCredential, "core_url": "https://core.example", "owner_epoch": 3,
		})
		return d
	}
	if _, err := noderoot.ParseNodeIdentity(identity()); err != nil {
		t.Fatalf("the base identity is refused: %v", err)
	}
	configuration, _ := json.Marshal(configurationDoc(t))
	if _, err := core.ParseConfiguration(configuration); err != nil {
		t.Fatalf("the base configuration is refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		doc  []byte
		read func([]byte) error
		want error
	}{
		{"preparation case variant", []byte(`{"SOURCE_URL":"https://a.example","source_url":"https://b.example"}`), parsePreparationErr, noderoot.ErrRecord},
		{"preparation case variant alone", []byte(`{"Source_URL":"https://a.example"}`), parsePreparationErr, noderoot.ErrRecord},
		{"preparation duplicate", []byte(`{"source_url":"https://a.example","source_url":"https://b.example"}`), parsePreparationErr, noderoot.ErrRecord},
		{"runtime artifacts duplicate path", []byte(artifacts(`"` + release.PathSeccomp + `":"` + sum + `","` + release.PathSeccomp + `":"` + strings.Repeat("2", 64) + `"`)), parseRuntimeArtifactsErr, noderoot.ErrRecord},
		{"runtime artifacts case variant", prefix([]byte(artifacts(`"`+release.PathSeccomp+`":"`+sum+`"`)), `"Source_Commit":"`+commitA+`"`), parseRuntimeArtifactsErr, noderoot.ErrRecord},
		{"identity case variant", prefix(identity(), `"Core_URL":"https://other.example"`), parseNodeIdentityErr, noderoot.ErrIdentity},
		{"identity duplicate", prefix(identity(), `"core_url":"https://other.example"`), parseNodeIdentityErr, noderoot.ErrIdentity},
		{"identity duplicate inner key", []byte(strings.Replace(string(identity()), `"identity":{`, `"identity":{"node_id":"00000000-0000-4000-8000-000000000000",`, 1)), parseNodeIdentityErr, noderoot.ErrIdentity},
		{"identity missing inner key", []byte(strings.Replace(string(identity()), `"max_active":1,`, ``, 1)), parseNodeIdentityErr, noderoot.ErrIdentity},
		{"configuration case variant", prefix(configuration, `"GENERATION":9`), parseConfigurationErr, core.ErrAnswer},
		{"configuration duplicate", prefix(configuration, `"generation":9`), parseConfigurationErr, core.ErrAnswer},
		{"configuration integer with a fraction", []byte(strings.Replace(string(configuration), `"generation":3`, `"generation":3.0`, 1)), parseConfigurationErr, core.ErrAnswer},
		{"configuration duplicate in an unknown key", prefix(configuration, `"newest":{"a":1,"a":2}`), parseConfigurationErr, core.ErrAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.read(tc.doc)
			if !errors.Is(err, tc.want) {
				t.Fatalf("read %s: %v, want %v", tc.doc, err, tc.want)
			}
			if strings.Contains(err.Error(), testCredential) {
				t.Errorf("the error shows the credential: %v", err)
			}
		})
	}
}

func TestCoreIdentityAnswerIsStrict(t *testing.T) {
	const echo = `"node_id":"7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6","installation_id":"x","provider":"docker","deployment_generation":1,"specification_digest":"d"`
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"ready", `{` + echo + `,"connected":true,"provider_ready":true,"max_active":1}`, true},
		{"flags absent", `{` + echo + `}`, true},
		{"case variant", `{` + echo + `,"connected":true,"Provider_Ready":false,"provider_ready":true}`, false},
		{"duplicate", `{` + echo + `,"connected":false,"connected":true,"provider_ready":true}`, false},
		{"string flag", `{` + echo + `,"connected":"true","provider_ready":true}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tc.body)) }))
			defer srv.Close()
			id := &noderoot.NodeIdentity{Credential: testCredential, CoreURL: srv.URL}
			pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
			a, status, err := coreIdentity(context.Background(), testCoreClient(t, id, pool))
			if tc.ok != (err == nil) {
				t.Fatalf("identity = %+v, %d, %v; want ok %v", a, status, err, tc.ok)
			}
		})
	}
}

func parsePreparationErr(data []byte) error { _, err := noderoot.ParsePreparation(data); return err }
func parseRuntimeArtifactsErr(data []byte) error {
	_, err := noderoot.ParseRuntimeArtifacts(data)
	return err
}
func parseNodeIdentityErr(data []byte) error  { _, err := noderoot.ParseNodeIdentity(data); return err }
func parseConfigurationErr(data []byte) error { _, err := core.ParseConfiguration(data); return err }
