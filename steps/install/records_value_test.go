package install

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// valueRecords are the node-root JSON records a rerun compares with what it
// computes (or with each other): the platform's programs write some of them
// on one line (CONTRACT §11).
var valueRecords = []string{layout.InstallationFile, layout.RegisteredFile, layout.PreparationFile, layout.RuntimeArtifactsFile, layout.ProviderConfigFile}

// platformLayout rewrites a record as the platform's Python writes JSON on
// one line (json.dumps: ", " and ": " separators, members in reverse order,
// "/" escaped as "\/" and non-ASCII as \u escapes): the same value, other
// bytes.
func platformLayout(t *testing.T, data []byte) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	var b bytes.Buffer
	b.WriteString("{")
	for i := len(keys) - 1; i >= 0; i-- {
		kb, _ := json.Marshal(keys[i])
		vb, err := json.Marshal(m[keys[i]])
		if err != nil {
			t.Fatal(err)
		}
		b.Write(kb)
		b.WriteString(": ")
		b.WriteString(strings.ReplaceAll(string(vb), "/", `\/`))
		if i > 0 {
			b.WriteString(", ")
		}
	}
	b.WriteString("}")
	if bytes.Equal(b.Bytes(), data) {
		t.Fatal("the platform's layout is the installer's")
	}
	return b.Bytes()
}

// A registered node whose records the platform's programs rewrote on one
// line, each holding the same value: the rerun is satisfied and leaves
// every record's bytes as they are; the same records with another value in
// that layout still refuse, with nothing changed.
func TestRecordsInThePlatformsLayoutAreTheSameValue(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	root := f.host.NodeRoot(generationtest.InstallationID)
	orig := map[string][]byte{}
	for _, rel := range valueRecords {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		orig[rel] = data
		nodeFile(t, f, rel, string(platformLayout(t, data)), 0o600)
	}
	f.save(t)
	before := f.tree(t, false)
	f.token = ""
	rep, err := f.install(t, nil)
	if err != nil {
		t.Fatalf("rerun over the platform's layout: %v\n%s", err, f.out.String())
	}
	if rep.Condition != workflow.Complete {
		t.Fatalf("rerun over the platform's layout: %s\n%s", rep.Condition, f.out.String())
	}
	if d := generationtest.DiffHost(before, f.tree(t, false)); d != "" {
		t.Errorf("the rerun rewrote a record the same in value:\n%s", d)
	}

	// Another value, in the platform's layout, of each record.
	for _, tc := range []struct {
		rel, key, want string
	}{
		{layout.InstallationFile, "generation", "registered for another deployment"},
		{layout.RegisteredFile, "generation", "registered.json differs"},
		{layout.PreparationFile, "source_url", "registered for another deployment"},
		{layout.RuntimeArtifactsFile, "source_commit", "registered for another deployment"},
		{layout.ProviderConfigFile, "generation", "another configuration"},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			f.restore(t)
			var m map[string]any
			if err := json.Unmarshal(orig[tc.rel], &m); err != nil {
				t.Fatal(err)
			}
			switch v := m[tc.key].(type) {
			case float64:
				m[tc.key] = v + 1
			case string:
				m[tc.key] = strings.Replace(v, v[len(v)-1:], "0", 1) + "1"
			default:
				t.Fatalf("%s: %s is %T", tc.rel, tc.key, v)
			}
			other, _ := json.Marshal(m)
			nodeFile(t, f, tc.rel, string(platformLayout(t, other)), 0o600)
			before := f.tree(t, false)
			_, err := f.install(t, nil)
			if err == nil {
				t.Fatalf("no refusal\n%s", f.out.String())
			}
			msg := workflow.Message(err)
			if !strings.Contains(msg, tc.want) || !strings.HasSuffix(msg, "Nothing was changed.") {
				t.Errorf("the refusal does not say %q, or that nothing was changed: %s", tc.want, msg)
			}
			if d := generationtest.DiffHost(before, f.tree(t, false)); d != "" {
				t.Errorf("the refusal changed the host:\n%s", d)
			}
		})
	}
}
