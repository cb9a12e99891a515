package status

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// An uninstallation that completed while the group oac-node stays without
// its account (a userdel an earlier installer's uninstall let end early
// leaves it, and every later install refuses it) is not "ok": status
// names the group and the commands that remove it and its memberships.
func TestStatusNamesTheGroupAnUninstallLeft(t *testing.T) {
	h := layout.Host{Root: t.TempDir()}
	if err := os.MkdirAll(filepath.Join(h.Root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(h.Root, "etc/passwd"), []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(h.Root, "etc/group"), []byte("root:x:0:\ndocker:x:105:oac-node\noac-node:x:995:\n"), 0o644)
	id := ident.InstallationID("0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a")
	s := &Installation{InstallationID: id, Workflows: []WorkflowStatus{{Report: workflow.Report{
		Workflow: workflow.UninstallDefinition().Name, Journal: filepath.Join(h.JournalDir(id), "uninstall.journal"),
		Condition: workflow.Complete,
	}}}}
	s.assess(advisor{host: h})
	if s.Condition != ConditionAttention {
		t.Fatalf("condition %q, next %q; want attention", s.Condition, s.Next)
	}
	for _, want := range []string{"sudo groupdel oac-node", "sudo gpasswd --delete oac-node docker"} {
		if !strings.Contains(s.Next, want) {
			t.Errorf("next %q lacks %q", s.Next, want)
		}
	}
	// Without the group, the same uninstallation is ok.
	os.WriteFile(filepath.Join(h.Root, "etc/group"), []byte("root:x:0:\ndocker:x:105:\n"), 0o644)
	s.assess(advisor{host: h})
	if s.Condition != ConditionOK {
		t.Errorf("condition %q, next %q without the group; want ok", s.Condition, s.Next)
	}
}
