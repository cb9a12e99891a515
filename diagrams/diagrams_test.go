package diagrams

import (
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/workflow"
)

func TestCommittedDiagramsAreCurrent(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 5 {
		t.Fatalf("want 5 diagrams, got %d", len(files))
	}
	for name, want := range files {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%s: %v (run `make diagrams`)", name, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s is stale: run `make diagrams` and commit the result", name)
		}
	}
}

func TestDiagramHasEveryTransition(t *testing.T) {
	for _, def := range workflow.Definitions() {
		s, err := Mermaid(def)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(s, "[*] --> "+string(def.Initial())+"\n") {
			t.Errorf("%s: start arrow does not point at %s", def.Name, def.Initial())
		}
		for _, sd := range def.States {
			for _, tr := range sd.On {
				line := "    " + string(sd.Name) + " --> " + string(tr.To) + ": " + string(tr.Event) + "\n"
				if !strings.Contains(s, line) {
					t.Errorf("%s: missing %q", def.Name, line)
				}
			}
		}
	}
}
