package noderoot

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/core"
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
	if _, err := ParseNodeIdentity(identity()); err != nil {
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
		{"preparation case variant", []byte(`{"SOURCE_URL":"https://a.example","source_url":"https://b.example"}`), parsePreparationErr, ErrRecord},
		{"preparation case variant alone", []byte(`{"Source_URL":"https://a.example"}`), parsePreparationErr, ErrRecord},
		{"preparation duplicate", []byte(`{"source_url":"https://a.example","source_url":"https://b.example"}`), parsePreparationErr, ErrRecord},
		{"runtime artifacts duplicate path", []byte(artifacts(`"` + release.PathSeccomp + `":"` + sum + `","` + release.PathSeccomp + `":"` + strings.Repeat("2", 64) + `"`)), parseRuntimeArtifactsErr, ErrRecord},
		{"runtime artifacts case variant", prefix([]byte(artifacts(`"`+release.PathSeccomp+`":"`+sum+`"`)), `"Source_Commit":"`+commitA+`"`), parseRuntimeArtifactsErr, ErrRecord},
		{"identity case variant", prefix(identity(), `"Core_URL":"https://other.example"`), parseNodeIdentityErr, ErrIdentity},
		{"identity duplicate", prefix(identity(), `"core_url":"https://other.example"`), parseNodeIdentityErr, ErrIdentity},
		{"identity duplicate inner key", []byte(strings.Replace(string(identity()), `"identity":{`, `"identity":{"node_id":"00000000-0000-4000-8000-000000000000",`, 1)), parseNodeIdentityErr, ErrIdentity},
		{"identity missing inner key", []byte(strings.Replace(string(identity()), `"max_active":1,`, ``, 1)), parseNodeIdentityErr, ErrIdentity},
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

func parsePreparationErr(data []byte) error { _, err := ParsePreparation(data); return err }
func parseRuntimeArtifactsErr(data []byte) error {
	_, err := ParseRuntimeArtifacts(data)
	return err
}
func parseNodeIdentityErr(data []byte) error  { _, err := ParseNodeIdentity(data); return err }
func parseConfigurationErr(data []byte) error { _, err := core.ParseConfiguration(data); return err }
