package install

import (
	"bytes"
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
	"golang.org/x/sys/unix"
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
// warning on out, never a failure. It returns the files it wrote (for the
// run's result: a converged install that copied the command changed the
// host).
func KeepCommand(h layout.Host, bin Executable, version string, out io.Writer) (wrote []string) {
	changed, wrote, err := keepCommand(h, bin, version)
	switch {
	case err != nil:
		fmt.Fprintf(out, "Warning: the command was not kept as %s (%v); run this installer's own file with sudo for status and uninstall.\n", h.Command(), err)
	case changed:
		fmt.Fprintf(out, "The command on this host is now %s (this build).\n", h.Command())
	}
	return wrote
}

func keepCommand(h layout.Host, bin Executable, version string) (changed bool, wrote []string, err error) {
	path := h.Command()
	dir, err := commandDir(path)
	if err != nil {
		return false, nil, err
	}
	defer dir.Close()
	name := filepath.Base(path)
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
		return false, nil, err
	}
	held, err := compareFile(dir, name, bin)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return false, nil, err
	case !recorded || rec.Path != path:
		return false, nil, errors.New("a file the installer did not write is there; it is kept")
	case held.same && rec.Version == version && rec.File != nil && *rec.File == held.stamp:
		// The file is the one recorded, untouched since (its stamp), so
		// the recorded digest is its bytes', which are bin: nothing to
		// hash, nothing to write.
		return false, nil, nil
	case held.same:
		// The same bytes, recorded before the stamp was (an older
		// installer, or a run cut off after its copy): recorded now.
		digest, err := readDigest(io.NewSectionReader(bin, 0, bin.Size()))
		if err != nil {
			return false, nil, fmt.Errorf("read the installer's bytes: %w", err)
		}
		db := h.Bookkeeping()
		return false, []string{db}, setCommand(h, bookkeeping.Command{Path: path, SHA256: digest, Version: version, File: &held.stamp})
	}
	data := make([]byte, bin.Size())
	if _, err := bin.ReadAt(data, 0); err != nil && err != io.EOF {
		return false, nil, fmt.Errorf("read the installer's bytes: %w", err)
	}
	sum := sha256.Sum256(data)
	want := bookkeeping.Command{Path: path, SHA256: hex.EncodeToString(sum[:]), Version: version}
	// The record comes first: cut off between the two, the bookkeeping
	// names a copy that is missing or older, which the next run replaces.
	wrote = []string{h.Bookkeeping()}
	if err := setCommand(h, want); err != nil {
		return false, wrote, err
	}
	wrote = append(wrote, path)
	if err := dir.AtomicWrite(name, data, 0o755); err != nil {
		return false, wrote, err
	}
	// Then the new file's stamp (the rename changed its change time), so
	// that reruns need not hash it; cut off before, the next run hashes
	// once and records it.
	st, err := dir.Lstat(name)
	if err != nil {
		return true, wrote, err
	}
	want.File = stampOf(&st)
	return true, wrote, setCommand(h, want)
}

// Executable is the running installer's bytes (privsep.Binary, its sealed
// copy), read through ReadAt.
type Executable interface {
	io.ReaderAt
	Size() int64
}

// heldCopy is what compareFile found at the command's path.
type heldCopy struct {
	stamp bookkeeping.FileStamp
	same  bool // its bytes are the running installer's
}

// compareFile opens the regular file name in dir (no link followed) and
// compares its bytes with bin's: a size check, then both read into two
// small buffers (the pages of bin's mapping are never touched, and a
// memory compare costs a tenth of a hash).
func compareFile(dir *safefile.Root, name string, bin Executable) (heldCopy, error) {
	f, err := dir.OpenFile(name, safefile.Expect{UID: safefile.AnyUID})
	if err != nil {
		return heldCopy{}, err
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return heldCopy{}, &os.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	held := heldCopy{stamp: *stampOf(&st)}
	size := bin.Size()
	if st.Size != size {
		return held, nil
	}
	const chunk = 256 << 10
	buf := make([]byte, 2*chunk)
	a, b := buf[:chunk], buf[chunk:]
	for off := int64(0); off < size; {
		n := int(min(chunk, size-off))
		if _, err := io.ReadFull(f, a[:n]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				return held, nil // shorter than its size a moment ago
			}
			return heldCopy{}, err
		}
		if _, err := bin.ReadAt(b[:n], off); err != nil && err != io.EOF {
			return heldCopy{}, fmt.Errorf("read the installer's bytes: %w", err)
		}
		if !bytes.Equal(a[:n], b[:n]) {
			return held, nil
		}
		off += int64(n)
	}
	held.same = true
	return held, nil
}

// stampOf is st's inode and change stamp.
func stampOf(st *unix.Stat_t) *bookkeeping.FileStamp {
	return &bookkeeping.FileStamp{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size,
		MtimeNs: st.Mtim.Nano(), CtimeNs: st.Ctim.Nano()}
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
	return readDigest(f)
}

// readDigest is the hex sha256 of what r reads.
func readDigest(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
