package install

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// TestAFailedRunNamesTheShortRerun: once root's bookkeeping holds what a
// registered installation was given (its source, and root's copy of its
// Core CA when it has one), the advice after a failure names
// `sudo oac-node-install --installation-id <id>`; before registration
// (the token is still needed) or without the source or the copy, the same
// command.
func TestAFailedRunNamesTheShortRerun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: the bookkeeping and root's CA copy are files of root's")
	}
	const id = ident.InstallationID("0b8e2f1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
	h := layout.Host{Root: t.TempDir()}
	if err := os.MkdirAll(h.EtcDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	put := func(inst bookkeeping.Installation) {
		db, err := bookkeeping.Open(h.Bookkeeping())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.PutInstallation(inst); err != nil {
			t.Fatal(err)
		}
	}
	inst := bookkeeping.Installation{ID: id, Provider: "docker", CoreURL: "https://core.example.com", NodeRoot: h.NodeRoot(id),
		Unit: h.Unit(id), EnvFile: h.EnvFile(id), CoreCA: strings.Repeat("a", 64), SourceURL: "https://console.example.com"}
	put(inst)
	short := "sudo oac-node-install --installation-id " + string(id)
	if got := ShortRerun(h, id); got != "" {
		t.Errorf("unregistered: %q", got)
	}
	inst.Registered = true
	put(inst)
	if got := ShortRerun(h, id); got != "" {
		t.Errorf("without root's CA copy: %q", got)
	}
	if err := os.WriteFile(hostrecord.CoreCACopy(h, id), []byte("pem"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := ShortRerun(h, id); got != short {
		t.Errorf("recorded: %q, want %q", got, short)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{errors.New("the engine stopped"), "Rerun `" + short + "` to continue the installation."},
		{workflow.Refuse(errors.New("no")), "Once that is dealt with, rerun `" + short + "` to continue the installation."},
	} {
		if got := nextInstall(c.err, ShortRerun(h, id)); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
	if got := nextInstall(errors.New("x"), ""); got != "Rerun the same command to continue the installation." {
		t.Errorf("without records: %q", got)
	}
}
