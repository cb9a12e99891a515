package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// unsafeAdvice matches advice that has root run a command as another
// account on its terminal (the account can ptrace the command and push
// keystrokes into root's terminal with TIOCSTI), whatever the tool.
var unsafeAdvice = regexp.MustCompile(`sudo\s+(-[A-Za-z]*\s+)*-u\b|\brunuser\b|\bsetpriv\b|\bsu\s+(-|oac-node)|\bpkexec\b|\bdoas\s+-u|machinectl\s+shell`)

// TestNoMessageHandsRootsTerminalToTheAccount reads every string literal
// of the programs' sources (messages, hints, `next` advice, help text and
// the format strings they are made from: every file but tests) and
// refuses one that asks root to run a command as the service account on
// its terminal, or to pass the node root's Core CA copy, a path in the
// service account's home, to --core-ca.
func TestNoMessageHandsRootsTerminalToTheAccount(t *testing.T) {
	modRoot, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files, literals := 0, 0
	err = filepath.WalkDir(modRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != modRoot {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			literals++
			if unsafeAdvice.MatchString(s) {
				t.Errorf("%s: %q has root run a command as another account on its terminal", fset.Position(lit.Pos()), s)
			}
			if strings.Contains(s, "--core-ca") && (strings.Contains(s, layout.HomeRel) || strings.Contains(s, layout.NodesRel)) {
				t.Errorf("%s: %q names a path in the service account's home for --core-ca", fset.Position(lit.Pos()), s)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 || literals < 1000 {
		t.Fatalf("read %d files and %d literals: the walk missed the sources", files, literals)
	}
	t.Logf("%d files, %d string literals read", files, literals)
}

// TestStatusAdviceNamesNoCAInTheNodeRoot: the install command status
// names for an installation recorded with --core-ca never passes a path
// in the service account's home: before root kept its own copy it leaves
// the file for the operator; once root's records hold everything it is
// only the installation id.
func TestStatusAdviceNamesNoCAInTheNodeRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: the bookkeeping and root's CA copy are files of root's")
	}
	h := layout.Host{Root: t.TempDir()}
	must(t, os.MkdirAll(h.EtcDir(), 0o755))
	id := ident.InstallationID("0b8e2f1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
	rec := &hostrecord.Record{Format: hostrecord.Version, InstallationID: id, Provider: "docker",
		CoreURL: "https://core.example.com", CoreCA: layout.Node{Root: h.NodeRoot(id)}.CoreCA(), CoreCASHA256: strings.Repeat("a", 64)}
	cmd, ok := continueCommand(h, id, rec)
	if !ok || strings.Contains(cmd, h.Home()) || !strings.Contains(cmd, "--core-ca '"+coreCAPlaceholder+"'") {
		t.Fatalf("without root's records: %q, %v", cmd, ok)
	}
	db, err := bookkeeping.Open(h.Bookkeeping())
	must(t, err)
	must(t, db.PutInstallation(bookkeeping.Installation{ID: id, Provider: "docker", CoreURL: rec.CoreURL, NodeRoot: h.NodeRoot(id),
		Unit: h.Unit(id), EnvFile: h.EnvFile(id), CoreCA: rec.CoreCASHA256, SourceURL: "https://console.example.com"}))
	must(t, db.Close())
	must(t, os.WriteFile(hostrecord.CoreCACopy(h, id), []byte("pem"), 0o644))
	cmd, ok = continueCommand(h, id, rec)
	if want := "sudo oac-node-install --installation-id " + string(id); !ok || cmd != want {
		t.Fatalf("with root's records: %q, %v; want %q", cmd, ok, want)
	}
}
