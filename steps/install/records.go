package install

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// CheckBookkeeping refuses a command, before its first change, on a host
// whose bookkeeping database exists but is damaged (bookkeeping.ErrDamaged)
// or cannot be read, naming the recovery. A host without one passes.
func CheckBookkeeping(h layout.Host, id string) error {
	if _, err := os.Lstat(h.Bookkeeping()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	switch {
	case errors.Is(err, bookkeeping.ErrDamaged):
		return workflow.Refuse(fmt.Errorf("%w; %s", err, bookkeeping.DamagedAdvice(h.Bookkeeping(), id)))
	case err != nil:
		return workflow.Refuse(err)
	}
	return db.Close()
}

// markRegistered records in the bookkeeping that the installation
// registered.
func markRegistered(d Data) error {
	db, err := openBookkeeping(d)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.MarkRegistered(d.Options().InstallationID)
}

// Registered reports whether root's records say the installation
// registered with Core: its bookkeeping entry, or the current install
// journal's register step done (a run cut off between that step and the
// next, which records it in the bookkeeping). The account's files
// (identity.json, registered.json) never decide it.
func Registered(h layout.Host, id string) (bool, error) {
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if err == nil {
		inst, gerr := db.GetInstallation(id)
		db.Close()
		if gerr == nil && inst.Registered {
			return true, nil
		}
		if gerr != nil && !errors.Is(gerr, bookkeeping.ErrNotFound) {
			return false, gerr
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	rep, err := workflow.InspectJournal(JournalPath(h, id), workflow.Lookup)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, nil // the engine judges an unreadable journal
	}
	for _, c := range rep.Completed {
		if c.State == workflow.InstallRegister {
			return true, nil
		}
	}
	return false, nil
}

// openBookkeeping opens the bbolt bookkeeping, creating /etc/oac-node
// (0755, root's) first.
func openBookkeeping(d Data) (*bookkeeping.DB, error) {
	if err := ensureDir(d.Host().EtcDir(), 0o755); err != nil {
		return nil, err
	}
	return d.Bookkeeping()
}

// ensureDir makes dir (one level) with mode perm, root's, never a link,
// and makes it and its name durable, also when found in place: an earlier
// run may have made it and been cut off before syncing its parent.
func ensureDir(dir string, perm os.FileMode) error {
	if err := os.Mkdir(dir, perm); err == nil {
		if err := os.Chmod(dir, perm); err != nil {
			return err
		}
	} else if !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dir))
}

func syncDir(dir string) error { return safefile.SyncDir(dir) }

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
	if err := db.PutInstallation(inst); err != nil {
		return workflow.Result{}, err
	}
	path := d.Host().Record(o.InstallationID)
	if err := db.AddFile(bookkeeping.File{Path: path, InstallationID: o.InstallationID, Kind: bookkeeping.FileRecord}); err != nil {
		return workflow.Result{}, err
	}
	if err := hostrecord.Write(d.Host(), HostRecord(d)); err != nil {
		return workflow.Result{}, err
	}
	if err := ensureDir(d.Host().DockerConfig(), 0o755); err != nil {
		return workflow.Result{}, err
	}
	return workflow.Result{}, nil
}

var _ = layout.Account
