package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// CheckBookkeeping refuses a command, before its first change, on a host
// whose bookkeeping database exists but is damaged (bookkeeping.ErrDamaged)
// or cannot be read, naming the recovery. A host without one passes.
func CheckBookkeeping(h layout.Host, id ident.InstallationID) error {
	if _, err := os.Lstat(h.Bookkeeping()); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil // bookkeeping.ErrHoldsNothing: the account step makes it anew
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
func Registered(h layout.Host, id ident.InstallationID) (bool, error) {
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

var _ = layout.Account

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// durable makes root's file p, found holding the bytes it should, and its
// name durable.
func durable(p string) error {
	return safefile.DurablePath(p, safefile.Expect{UID: safefile.AnyUID})
}

// checkRecordMissing refuses an installation the bookkeeping records while
// its host record is gone, unless an unfinished run of the install journal
// explains it (the host records step writes the bookkeeping entry first):
// the two records disagree, and neither is taken for the truth.
func checkRecordMissing(h layout.Host, id ident.InstallationID) error {
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, gerr := db.GetInstallation(id)
	db.Close()
	if errors.Is(gerr, bookkeeping.ErrNotFound) {
		return nil
	}
	if gerr != nil {
		return gerr
	}
	if rep, err := workflow.InspectJournal(JournalPath(h, id), workflow.Lookup); err == nil && rep.Condition != workflow.Complete {
		return nil // the run the engine resumes writes the record
	}
	return errors.New(hostrecord.Missing(h, id))
}

// knownNode reports whether the host records this installation.
func knownNode(h layout.Host, id ident.InstallationID) (bool, error) {
	return safefile.Exists(h.Record(id))
}

// CheckHostRecord refuses a command whose Core address, insecure-origin
// policy or Core CA differ from what the host recorded for the
// installation (/etc/oac-node/<id>.json, root's).
func CheckHostRecord(h layout.Host, o Options) error {
	rec, err := readHostRecord(h, o.InstallationID)
	if err != nil {
		return err
	}
	if rec.InstallationID != o.InstallationID {
		return fmt.Errorf("the host record %s names installation %q, not %s; it was not written by this installer for this node: remove it or restore it", h.Record(o.InstallationID), rec.InstallationID, o.InstallationID)
	}
	// The bookkeeping is authoritative; a record that disagrees with it
	// is refused (CONTRACT §10).
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrPermission) {
		// The check command without root cannot read the bookkeeping
		// (0600); install runs as root.
		return checkHostRecordCommand(rec, o)
	}
	if err != nil {
		return fmt.Errorf("the host record %s exists but the installer's bookkeeping %s cannot be read (%v); uninstall the node and add it again", h.Record(o.InstallationID), h.Bookkeeping(), err)
	}
	inst, err := db.GetInstallation(o.InstallationID)
	db.Close()
	if err != nil {
		return fmt.Errorf("the host record %s exists but the installer's bookkeeping %s has no entry for it (%v); uninstall the node and add it again", h.Record(o.InstallationID), h.Bookkeeping(), err)
	}
	for _, d := range []struct {
		name     string
		rec, inv any
	}{
		{"provider", rec.Provider, inst.Provider}, {"core_url", rec.CoreURL, inst.CoreURL}, {"node_root", rec.NodeRoot, inst.NodeRoot},
		{"unit", rec.Unit, inst.Unit}, {"allow_insecure_origin", rec.AllowInsecureOrigin, inst.AllowInsecureOrigin},
		{"core_ca_sha256", rec.CoreCASHA256, inst.CoreCA},
	} {
		if d.rec != d.inv {
			return fmt.Errorf("the host record %s and the installer's bookkeeping %s disagree about %s; the bookkeeping is authoritative: restore the record or uninstall the node and add it again", h.Record(o.InstallationID), h.Bookkeeping(), d.name)
		}
	}
	return checkHostRecordCommand(rec, o)
}

// checkHostRecordCommand compares the command with the host record.
func checkHostRecordCommand(rec hostrecord.Record, o Options) error {
	ca := ""
	if len(o.CoreCA) > 0 {
		ca = sha256Hex(o.CoreCA)
	}
	switch {
	case rec.CoreURL != o.CoreURL:
		return fmt.Errorf("this host's node uses %s, but this command uses %s; remove the node and add it again to move it to another Core", rec.CoreURL, o.CoreURL)
	case rec.AllowInsecureOrigin && !o.AllowInsecureOrigin:
		return fmt.Errorf("this host's node was installed with --allow-insecure-origin and this command lacks it; rerun it with --allow-insecure-origin")
	case !rec.AllowInsecureOrigin && o.AllowInsecureOrigin:
		return fmt.Errorf("this host's node was installed without --allow-insecure-origin; rerun the command without it")
	case rec.CoreCASHA256 == ca:
		return nil
	case ca == "":
		return fmt.Errorf("this host's node was installed with --core-ca (a CA bundle with sha256 %s) and this command has none: rerun it with --core-ca and the same file; %s",
			rec.CoreCASHA256, nodeCACopy(rec))
	case rec.CoreCASHA256 == "":
		return fmt.Errorf("this host's node was installed without --core-ca (Core's certificate is checked against the system's roots); rerun the command without --core-ca")
	}
	return fmt.Errorf("this host's node was installed with a different Core CA (sha256 %s; this command's --core-ca file has sha256 %s): rerun it with the same file; %s",
		rec.CoreCASHA256, ca, nodeCACopy(rec))
}

// nodeCACopy says where the Core CA comes from. Root's copy beside the
// host record is what a rerun without --core-ca reads; the node root's copy
// is never named: the service account can write it, and neither reading it
// as that account on root's terminal nor passing its path to root is safe.
func nodeCACopy(rec hostrecord.Record) string {
	return fmt.Sprintf("pass the file the node was installed with, from a directory only root can write; once root keeps its copy (%s) a rerun needs no --core-ca",
		layout.Default.EtcDir()+"/"+string(rec.InstallationID)+".core-ca.pem")
}

// readHostRecord reads the host record of installation id (root's).
func readHostRecord(h layout.Host, id ident.InstallationID) (hostrecord.Record, error) {
	rec, err := hostrecord.Read(h, id)
	if err != nil && !errors.Is(err, hostrecord.ErrInvalid) {
		return rec, fmt.Errorf("read the host record: %w", err)
	}
	return rec, err
}

// discardRecords removes root's records of an installation that never
// registered: its host record (with root's Core CA copy), its bookkeeping entry, and its journal,
// kept aside as a receipt so that the next run starts anew.
func discardRecords(h layout.Host, id ident.InstallationID, journalPath string) error {
	// The journal first: cut off after it, the records left make the new
	// command refuse, naming the uninstall, rather than resume a journal
	// whose host_records step is done while its record is gone.
	if err := journal.KeepAside(journalPath); err != nil {
		return err
	}
	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		return err
	}
	defer db.Close()
	files, err := db.Files(id)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Kind != bookkeeping.FileRecord && f.Kind != bookkeeping.FileCoreCA {
			continue
		}
		if err := safefile.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", f.Path, err)
		}
		if err := db.RemoveFile(f.Path); err != nil {
			return err
		}
	}
	// The network stays on the engine, labelled with the installation,
	// for the new command's run to find; its record goes with the entry.
	nets, err := db.Networks(id)
	if err != nil {
		return err
	}
	for _, n := range nets {
		if err := db.RemoveNetwork(n.Name); err != nil {
			return err
		}
	}
	if err := db.DeleteInstallation(id); err != nil && !errors.Is(err, bookkeeping.ErrNotFound) {
		return err
	}
	return nil
}

// ShortRerun is the command that continues installation id when root's
// records hold all it was given and the node has its credential (no
// token is needed): `sudo oac-node-install --installation-id <id>`; ""
// otherwise (a node not registered needs its token, an installation
// recorded before its source was, or taken over, its full command once).
func ShortRerun(h layout.Host, id ident.InstallationID) string {
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if err != nil {
		return ""
	}
	inst, err := db.GetInstallation(id)
	db.Close()
	if err != nil || !inst.Registered || (inst.SourceURL == "" && inst.Bundle == "") {
		return ""
	}
	if inst.CoreCA != "" {
		if ok, err := safefile.Exists(hostrecord.CoreCACopy(h, id)); err != nil || !ok {
			return ""
		}
	}
	return "sudo oac-node-install --installation-id " + string(id)
}
