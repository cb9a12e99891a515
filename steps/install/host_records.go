package install

import (
	"bytes"
	"context"
	"os"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// HostRecord is the installation's /etc/oac-node/<id>.json (CONTRACT
// §3.4), the host's list of nodes for other tools. The bookkeeping is
// authoritative.
func HostRecord(d Data) hostrecord.Record {
	o := d.Options()
	rec := hostrecord.Record{
		Format: hostrecord.Version, InstallationID: o.InstallationID, Provider: d.Configuration().Provider,
		CoreURL: o.CoreURL, NodeRoot: d.Host().NodeRoot(o.InstallationID), Unit: d.Host().Unit(o.InstallationID),
		AllowInsecureOrigin: o.AllowInsecureOrigin,
	}
	if len(o.CoreCA) > 0 {
		rec.CoreCA = layout.Node{Root: d.Host().NodeRoot(o.InstallationID)}.CoreCA()
		rec.CoreCASHA256 = sha256Hex(o.CoreCA)
	}
	return rec
}

// recordedSource is where the installation's files come from as the
// bookkeeping records it: the bundle's directory for an offline install
// (whose SourceURL is Core's origin, derived), else the console's origin.
func recordedSource(o Options) (sourceURL, bundle string) {
	if o.Bundle != "" {
		return "", o.Bundle
	}
	return o.SourceURL, ""
}

// hostRecordsStep records the installation in the bookkeeping, then
// writes /etc/oac-node/<id>.json (0644) and the empty Docker configuration
// directory /run/oac-node-docker (0755).
type hostRecordsStep struct{ d Data }

func (s hostRecordsStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	d, o := s.d, s.d.Options()
	db, err := openBookkeeping(d)
	if err != nil {
		return workflow.Result{}, err
	}
	defer db.Close()
	inst := bookkeeping.Installation{
		ID: o.InstallationID, Provider: d.Configuration().Provider, CoreURL: o.CoreURL,
		NodeRoot: d.Host().NodeRoot(o.InstallationID), Unit: d.Host().Unit(o.InstallationID), EnvFile: d.Host().EnvFile(o.InstallationID),
		AllowInsecureOrigin: o.AllowInsecureOrigin,
	}
	if len(o.CoreCA) > 0 {
		inst.CoreCA = sha256Hex(o.CoreCA)
	}
	inst.SourceURL, inst.Bundle = recordedSource(o)
	if err := db.PutInstallation(inst); err != nil {
		return workflow.Result{}, err
	}
	path := d.Host().Record(o.InstallationID)
	if err := db.AddFile(bookkeeping.File{Path: path, InstallationID: o.InstallationID, Kind: bookkeeping.FileRecord}); err != nil {
		return workflow.Result{}, err
	}
	if len(o.CoreCA) > 0 {
		ca := hostrecord.CoreCACopy(d.Host(), o.InstallationID)
		if err := db.AddFile(bookkeeping.File{Path: ca, InstallationID: o.InstallationID, Kind: bookkeeping.FileCoreCA}); err != nil {
			return workflow.Result{}, err
		}
		if err := safefile.AtomicWrite(ca, o.CoreCA, 0o644); err != nil {
			return workflow.Result{}, err
		}
	}
	if err := hostrecord.Write(d.Host(), HostRecord(d)); err != nil {
		return workflow.Result{}, err
	}
	if err := ensureDir(d.Host().DockerConfig(), 0o755); err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{}, nil
}

// expectedInstallation is the bookkeeping entry the host records step
// writes.
func expectedInstallation(d Data) bookkeeping.Installation {
	o := d.Options()
	inst := bookkeeping.Installation{
		ID: o.InstallationID, Provider: d.Configuration().Provider, CoreURL: o.CoreURL,
		NodeRoot: d.Host().NodeRoot(o.InstallationID), Unit: d.Host().Unit(o.InstallationID), EnvFile: d.Host().EnvFile(o.InstallationID),
		AllowInsecureOrigin: o.AllowInsecureOrigin,
	}
	if len(o.CoreCA) > 0 {
		inst.CoreCA = sha256Hex(o.CoreCA)
	}
	inst.SourceURL, inst.Bundle = recordedSource(o)
	return inst
}

// Check: the bookkeeping's entry and file record, the host record's bytes
// and /run/oac-node-docker are what the step writes.
func (s hostRecordsStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	db, ok, err := readBookkeeping(d.Host())
	if err != nil || !ok {
		return notDone, workflow.Result{}, err
	}
	defer db.Close()
	got, err := db.GetInstallation(id)
	if err != nil {
		return notDone, workflow.Result{}, nil
	}
	got.Created = expectedInstallation(d).Created
	got.Registered = false // recorded by the env_file step, after register; kept by a rerun
	got.Platform = false   // recorded by a takeover; kept by a rerun
	path := d.Host().Record(id)
	if got != expectedInstallation(d) || !recordsFile(db, id, path) {
		return notDone, workflow.Result{}, nil
	}
	want, err := HostRecord(d).Marshal()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, want) {
		return notDone, workflow.Result{}, nil
	}
	if ca := d.Options().CoreCA; len(ca) > 0 {
		copyPath := hostrecord.CoreCACopy(d.Host(), id)
		if data, err := os.ReadFile(copyPath); err != nil || !bytes.Equal(data, ca) || !recordsFile(db, id, copyPath) {
			return notDone, workflow.Result{}, nil
		}
	}
	if fi, err := os.Lstat(d.Host().DockerConfig()); err != nil || !fi.IsDir() {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, nil
}
