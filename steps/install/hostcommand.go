package install

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// KeepCommand leaves bin, the bytes of the installer that ran, as the
// command on the host (CONTRACT §10, "The command on the host"):
// /usr/local/sbin/oac-node-install, root:root 0755, written atomically and
// recorded in the bookkeeping. It is called under the host lock once a run
// installed the node, or found it installed. The copy is replaced when its
// bytes differ (the command last run wins) and left alone when they are
// the same. A file there that the bookkeeping does not record is not the
// installer's: it is kept, and so is a directory that is not root's alone.
// The node is installed either way: a copy that cannot be kept is a
// warning on out, never a failure.
func KeepCommand(h layout.Host, bin []byte, version string, out io.Writer) {
	changed, err := keepCommand(h, bin, version)
	switch {
	case err != nil:
		fmt.Fprintf(out, "Warning: the command was not kept as %s (%v); run this installer's own file with sudo for status and uninstall.\n", h.Command(), err)
	case changed:
		fmt.Fprintf(out, "The command on this host is now %s (this build).\n", h.Command())
	}
}

func keepCommand(h layout.Host, bin []byte, version string) (bool, error) {
	path := h.Command()
	dir, err := commandDir(path)
	if err != nil {
		return false, err
	}
	defer dir.Close()
	name := filepath.Base(path)
	sum := sha256.Sum256(bin)
	digest := hex.EncodeToString(sum[:])
	// Read-only first: a converged run leaves installer.db as it is (an
	// open for writing writes it).
	var rec bookkeeping.Command
	recorded := false
	ro, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if err == nil {
		rec, recorded, err = ro.GetCommand()
		ro.Close()
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	want := bookkeeping.Command{Path: path, SHA256: digest, Version: version}
	held, err := fileDigest(dir, name)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return false, err
	case !recorded || rec.Path != path:
		return false, errors.New("a file the installer did not write is there; it is kept")
	case held == digest && rec.SHA256 == digest && rec.Version == version:
		return false, nil
	case held == digest:
		return false, setCommand(h, want)
	}
	// The record comes first: cut off between the two, the bookkeeping
	// names a copy that is missing or older, which the next run replaces.
	if err := setCommand(h, want); err != nil {
		return false, err
	}
	if err := dir.AtomicWrite(name, bin, 0o755); err != nil {
		return false, err
	}
	return true, nil
}

// setCommand records c in the bookkeeping.
func setCommand(h layout.Host, c bookkeeping.Command) error {
	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		return err
	}
	defer db.Close()
	return db.SetCommand(c)
}

// RemoveCommand removes the command on the host when the last node is
// gone (uninstall's bookkeeping step, under the host lock, with db open):
// the recorded copy, if its bytes are still those recorded; a copy changed
// since is kept, and said so on out. The record goes either way.
func RemoveCommand(db *bookkeeping.DB, out io.Writer) error {
	rec, recorded, err := db.GetCommand()
	if err != nil || !recorded {
		return err
	}
	dir, err := commandDir(rec.Path)
	if errors.Is(err, os.ErrNotExist) {
		return db.ForgetCommand()
	}
	if err != nil {
		return err
	}
	defer dir.Close()
	held, err := fileDigest(dir, filepath.Base(rec.Path))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case held != rec.SHA256:
		fmt.Fprintf(out, "Kept %s: it changed since the installer wrote it.\n", rec.Path)
	default:
		// With the temporary file an interrupted write left, the
		// directory synced (safefile.RemoveWritten).
		if err := safefile.RemoveWritten(rec.Path); err != nil {
			return fmt.Errorf("remove %s: %w", rec.Path, err)
		}
		// The operator typed oac-node-install from PATH a moment ago: the
		// next one finds no such command, and must know why.
		fmt.Fprintf(out, "Removed the command %s: no node remains on this host. The next installation brings it back; until then `oac-node-install` is not on PATH.\n", rec.Path)
	}
	// A copy write cut off before its rename leaves its temporary file
	// (the command's size) whatever is at the path: the installer's own
	// name in a directory only root may change, removed with the record.
	if err := dir.Remove("." + filepath.Base(rec.Path) + ".tmp"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the interrupted copy of %s: %w", rec.Path, err)
	}
	return db.ForgetCommand()
}

// commandDir opens the directory of the command's path p as a safefile
// Root, reached without following a link in its last component, and
// checked to be one only root may change (owned by root, writable by no
// group or other).
func commandDir(p string) (*safefile.Root, error) {
	parent, err := safefile.OpenRootTrusted(filepath.Dir(filepath.Dir(p)))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	return parent.OpenDir(filepath.Base(filepath.Dir(p)), safefile.Expect{UID: 0, DenyMode: 0o022})
}

// fileDigest is the sha256 of the regular file name in dir (no link
// followed).
func fileDigest(dir *safefile.Root, name string) (string, error) {
	f, err := dir.OpenFile(name, safefile.Expect{UID: safefile.AnyUID})
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
