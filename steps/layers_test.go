// Package steps holds no code: its test checks the import rules between the
// packages under steps/ (README "Architecture").
package steps

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/openagentcore/oac-node-install/"

// engine are the packages that run workflows: the engine and the
// workflows' own packages.
var engine = []string{"workflow", "steps/install", "steps/uninstall", "steps/generation", "steps/noderoot", "steps/status"}

// allowed are the imports the rules refuse but the code needs, each with
// its reason: importer -> imported (module-relative package paths).
var allowed = map[[2]string]string{}

// testSupport reports whether pkg (module-relative) exists for tests only:
// under steps/testsupport, or named …test (accountstest, generationtest).
func testSupport(pkg string) bool {
	return strings.HasPrefix(pkg, "steps/testsupport/") || strings.HasSuffix(path.Base(pkg), "test")
}

// under reports whether pkg is one of prefixes or below one.
func under(pkg string, prefixes ...string) bool {
	for _, p := range prefixes {
		if pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}

// layerRule returns why importer may not import imported, or "".
func layerRule(importer, imported string) string {
	switch {
	case testSupport(imported) && !testSupport(importer):
		return "code that ships imports no test support"
	case under(importer, "steps/record") && under(imported, "steps/host"):
		return "a record format imports no host adapter"
	case under(importer, "steps/record") && under(imported, engine...):
		return "a record format imports no workflow-running package"
	case under(importer, "steps/host") && under(imported, engine...):
		return "a host adapter imports neither the engine nor a workflow's package"
	}
	return ""
}

// Every non-test .go file under steps/ keeps the layers: records below host
// adapters below the workflows' packages and the engine, and test support
// out of shipped code.
func TestLayers(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != "." && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		files++
		importer := path.Join("steps", filepath.ToSlash(filepath.Dir(p)))
		for _, spec := range f.Imports {
			imp, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			rel, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if why := layerRule(importer, rel); why != "" {
				if _, ok := allowed[[2]string{importer, rel}]; !ok {
					t.Errorf("%s imports %s: %s", p, rel, why)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go file found under steps/")
	}
	for pair := range allowed {
		if layerRule(pair[0], pair[1]) == "" {
			t.Errorf("the allowed import %s -> %s breaks no rule: drop it from allowed", pair[0], pair[1])
		}
	}
}

// The rules refuse what they must: a test that cannot fail proves nothing.
func TestLayerRules(t *testing.T) {
	for _, tc := range []struct {
		importer, imported string
		refused            bool
	}{
		{"steps/record/provider", "steps/host/microsandbox", true},
		{"steps/record/lease", "workflow", true},
		{"steps/record/lease", "steps/generation", true},
		{"steps/host/accounts", "workflow", true},
		{"steps/host/systemd", "steps/install", true},
		{"steps/install", "steps/testsupport/testhost", true},
		{"steps/install", "steps/host/accounts/accountstest", true},
		{"steps/host/download", "steps/record/layout", false},
		{"steps/install", "workflow", false},
		{"steps/generation/generationtest", "steps/record/release/releasetest", false},
		{"steps/record/provider", "journal/strictjson", false},
	} {
		if got := layerRule(tc.importer, tc.imported) != ""; got != tc.refused {
			t.Errorf("%s -> %s refused = %v, want %v", tc.importer, tc.imported, got, tc.refused)
		}
	}
}
