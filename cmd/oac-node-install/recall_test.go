package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// TestARerunNeedsOnlyTheInstallationID: with root's bookkeeping recording
// an installation's source, Core, provider, policy and Core CA (root's copy
// beside the host record), `--installation-id <id>` alone, and no flag at
// all on a host with that one installation, parse to the first command's
// options; the platform's full command parses unchanged; a flag that
// differs from the record is refused naming the difference; an
// installation recorded without its source or CA copy (an earlier version,
// a takeover) and one the host does not record say which flag to give.
func TestARerunNeedsOnlyTheInstallationID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: the bookkeeping and root's CA copy are files of root's")
	}
	const id = ident.InstallationID("0b8e2f1a-3c4d-4e5f-8a9b-0c1d2e3f4a5b")
	const pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	sum := sha256.Sum256([]byte(pem))
	h := layout.Host{Root: t.TempDir()}
	must(t, os.MkdirAll(h.EtcDir(), 0o755))
	inst := bookkeeping.Installation{ID: id, Provider: "docker", CoreURL: "http://core.example.com", NodeRoot: h.NodeRoot(id),
		Unit: h.Unit(id), EnvFile: h.EnvFile(id), AllowInsecureOrigin: true, CoreCA: hex.EncodeToString(sum[:]), SourceURL: "http://console.example.com"}
	put := func(inst bookkeeping.Installation) {
		db, err := bookkeeping.Open(h.Bookkeeping())
		must(t, err)
		must(t, db.PutInstallation(inst))
		must(t, db.Close())
	}
	put(inst)
	must(t, os.WriteFile(hostrecord.CoreCACopy(h, id), []byte(pem), 0o644))

	parse := func(args ...string) (*installerFlags, error) {
		f := &installerFlags{host: func() layout.Host { return h }}
		fs := pflag.NewFlagSet("oac-node-install", pflag.ContinueOnError)
		f.bind(fs)
		must(t, fs.Parse(args))
		return f, f.validate(fs)
	}
	full := []string{"--source-url", "http://console.example.com/", "--core-url", "http://core.example.com", "--allow-insecure-origin",
		"--core-ca", hostrecord.CoreCACopy(h, id), "--provider", "docker", "--installation-id", string(id)}
	for _, args := range [][]string{{"--installation-id", string(id)}, {}, full} {
		f, err := parse(args...)
		if err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		opts, err := installOptions(f)
		if err != nil || opts.InstallationID != id || opts.SourceURL != inst.SourceURL || opts.CoreURL != inst.CoreURL ||
			opts.Provider != "docker" || !opts.AllowInsecureOrigin || string(opts.CoreCA) != pem || opts.Bundle != "" {
			t.Errorf("%q: %+v, %v", args, opts, err)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--installation-id", string(id), "--source-url", "http://other.example.com"},
			"was installed with --source-url http://console.example.com, but this command says --source-url http://other.example.com"},
		{[]string{"--installation-id", string(id), "--bundle", "/srv/bundle"},
			"was installed with --source-url http://console.example.com, but this command says --bundle /srv/bundle"},
		{[]string{"--installation-id", string(id), "--core-url", "http://core2.example.com"},
			"was installed with --core-url http://core.example.com, but this command says --core-url http://core2.example.com"},
		{[]string{"--installation-id", string(id), "--provider", "microsandbox"},
			"was installed with --provider docker, but this command says --provider microsandbox"},
	} {
		_, err := parse(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "sudo oac-node-install --installation-id "+string(id)) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
	}

	// Recorded by an earlier version or a takeover: no source, no copy.
	must(t, os.Remove(hostrecord.CoreCACopy(h, id)))
	if _, err := parse("--installation-id", string(id)); err == nil || !strings.Contains(err.Error(), "this host keeps no copy of it of root's yet") {
		t.Errorf("without root's CA copy: %v", err)
	}
	db, err := bookkeeping.Open(h.Bookkeeping())
	must(t, err)
	must(t, db.DeleteInstallation(id))
	must(t, db.Close())
	old := inst
	old.SourceURL = ""
	put(old)
	if _, err := parse("--installation-id", string(id)); err == nil || !strings.Contains(err.Error(), "this host does not record where installation "+string(id)+"'s files come from") {
		t.Errorf("without the source: %v", err)
	}
	// Not recorded at all: the full command is needed, and said so.
	other := ident.InstallationID("1c9f3a2b-4d5e-4f60-9b1c-2d3e4f5a6b7c")
	if _, err := parse("--installation-id", string(other)); err == nil || !strings.Contains(err.Error(), "this host does not record installation "+string(other)) ||
		!strings.Contains(err.Error(), "run the full command Web generated") {
		t.Errorf("an unrecorded installation: %v", err)
	}
}
