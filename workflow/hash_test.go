package workflow

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// definitionHashes is the committed record of the five definitions' hashes.
var definitionHashes = filepath.Join("testdata", "definitions.hash")

// TestDefinitionHashesArePinned fails when a definition's persistent shape
// (states, steps, policies, events, final state) changes without the golden
// file being updated with it. The hash is bound into every journal header:
// a changed definition no longer resumes journals written by the previous
// binary, so the change is a journal format change and must be deliberate.
// Run with OAC_UPDATE_GOLDEN=1 to rewrite the file after such a change.
func TestDefinitionHashesArePinned(t *testing.T) {
	var b strings.Builder
	for _, def := range Definitions() {
		fmt.Fprintf(&b, "%s %s\n", def.Name, def.Hash())
	}
	if os.Getenv("OAC_UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(definitionHashes, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(definitionHashes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pinned := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, hash, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			t.Fatalf("%s: malformed line %q", definitionHashes, sc.Text())
		}
		pinned[name] = hash
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, def := range Definitions() {
		want, ok := pinned[def.Name]
		switch {
		case !ok:
			t.Errorf("workflow %s has no pinned hash in %s", def.Name, definitionHashes)
		case def.Hash() != want:
			t.Errorf("the %s definition changed (hash %s, pinned %s): this changes the journal format, and journals "+
				"written by the previous definition will no longer resume; if that is intended, rerun with "+
				"OAC_UPDATE_GOLDEN=1 and commit %s", def.Name, def.Hash(), want, definitionHashes)
		}
		delete(pinned, def.Name)
	}
	for name := range pinned {
		t.Errorf("%s pins workflow %s, which no longer exists", definitionHashes, name)
	}
}
