package uninstall

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The platform's installer's uninstall names the Runtime image in its
// hint only when provider.json's docker.image is a valid image id
// (sha256:<64 hex>); anything else is never printed as a command (item 7i
// of issue 26).
func TestUninstallImageHintOnlyForAValidImageID(t *testing.T) {
	for _, tc := range []struct {
		name, image string
		hint        bool
	}{
		{"valid image id", "", true},
		{"a tag", "alpine:latest", false},
		{"shell text", "sha256:00; rm -rf /", false},
		{"short digest", "sha256:0123456789abcdef", false},
		{"upper-case hex", "sha256:" + strings.Repeat("AB", 32), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			p := filepath.Join(f.host.NodeRoot(id), layout.ProviderConfigFile)
			data, err := os.ReadFile(p)
			must(t, err)
			var doc map[string]any
			must(t, json.Unmarshal(data, &doc))
			dk, _ := doc["docker"].(map[string]any)
			valid, _ := dk["image"].(string)
			if !strings.HasPrefix(valid, "sha256:") || len(valid) != len("sha256:")+64 {
				t.Fatalf("the installed provider.json's image is %q", valid)
			}
			if tc.image != "" {
				dk["image"] = tc.image
				out, err := json.Marshal(doc)
				must(t, err)
				fi, err := os.Stat(p)
				must(t, err)
				must(t, os.WriteFile(p, out, 0o600)) // keeps the file, its owner and mode
				if st, _ := os.Stat(p); st.Mode() != fi.Mode() {
					t.Fatalf("mode %v -> %v", fi.Mode(), st.Mode())
				}
			}
			rep, err := f.uninstall(t, false)
			if err != nil || rep.Condition != workflow.Complete {
				t.Fatalf("uninstall: %v %v\n%s", rep, err, f.out.String())
			}
			out := f.out.String()
			if tc.hint {
				if !strings.Contains(out, "sudo docker image rm "+valid) {
					t.Errorf("the hint does not name %s:\n%s", valid, out)
				}
				return
			}
			if strings.Contains(out, "docker image rm") || strings.Contains(out, tc.image) {
				t.Errorf("the output names the image %q:\n%s", tc.image, out)
			}
			if !strings.Contains(out, "uninstalled from this host") {
				t.Errorf("the output lacks the uninstall line:\n%s", out)
			}
		})
	}
}
