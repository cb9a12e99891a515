package lease

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Size limits of the records (CONTRACT §3.2).
const (
	maxRecord          = 4096
	maxPreparingRecord = 16384
	maxFinalConfig     = 1 << 20
)

// recordTemp prefixes the temporary file of every record write
// (.generation-<name>), which inspection knows.
const recordTemp = ".generation-"

// dirHandle is the generations directory opened once through the safe-file
// layer; every file in it is resolved beneath it, so a renamed or replaced
// parent path cannot redirect later opens.
type dirHandle struct {
	root *safefile.Root
	path string
	uid  int
}

// openDir opens dir without following a symbolic link and requires a
// directory owned by uid that neither group nor others can write.
func openDir(dir string, uid int) (*dirHandle, error) {
	parent, err := safefile.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open generations directory: %w", err)
	}
	defer parent.Close()
	root, err := parent.OpenDir(".", safefile.Expect{UID: uid, DenyMode: 0o022})
	if err != nil {
		return nil, fmt.Errorf("open generations directory: %w", err)
	}
	return &dirHandle{root: root, path: dir, uid: uid}, nil
}

func (d *dirHandle) close() error { return d.root.Close() }

func (d *dirHandle) join(name string) string { return filepath.Join(d.path, name) }

// private is what every record and lease must be: a regular file with one
// link, owned by the node account, mode 0600, at most limit bytes (0: any
// size).
func (d *dirHandle) private(limit int64) safefile.Expect {
	return safefile.Expect{UID: d.uid, Mode: 0o600, MaxSize: limit}
}

// checkPrivate applies the per-file checks every record and lease shares to
// st, which describes path.
func (d *dirHandle) checkPrivate(path string, st *unix.Stat_t) error {
	return safefile.Check(path, st, d.private(0))
}

// readRecord reads name with every check of CONTRACT §3.2: opened without
// links and without blocking, a private regular file of at most limit
// bytes, and, after reading, the path still names the inode that was read.
// A missing file returns an error matching os.ErrNotExist.
func (d *dirHandle) readRecord(name string, limit int64) ([]byte, unix.Stat_t, error) {
	return d.root.ReadFileStat(name, d.private(limit))
}

// sameInode checks that name still names the inode described by st.
func (d *dirHandle) sameInode(name string, st *unix.Stat_t) error {
	dev, ino, err := d.root.FileID(name)
	if errors.Is(err, os.ErrNotExist) {
		return refuse(d.join(name), "inode", ErrInodeReplaced, "the path was removed after it was opened")
	}
	if err != nil {
		return err
	}
	if dev != st.Dev || ino != st.Ino {
		return refuse(d.join(name), "inode", ErrInodeReplaced, "the path names inode %d, opened %d", ino, st.Ino)
	}
	return nil
}

// lstat stats name in the directory without following a link.
func (d *dirHandle) lstat(name string, st *unix.Stat_t) (err error) {
	*st, err = d.root.Lstat(name)
	return err
}

// exists reports whether name is present in any form (a dangling symbolic
// link counts).
func (d *dirHandle) exists(name string) (bool, error) { return d.root.Exists(name) }

// publish writes data as name atomically through a private temporary
// .generation-<name> file (writers of one record hold the installation
// lock), replacing name or, with noReplace, linking it in only if name is
// absent (an existing name returns an error matching os.ErrExist and
// changes nothing). The file and the directory are fsynced before it
// returns.
func (d *dirHandle) publish(name string, data []byte, noReplace bool) error {
	return d.root.Write(name, data, 0o600, safefile.WriteOptions{
		Temp: recordTemp, Point: "record-before-rename", NoReplace: noReplace})
}

// durable makes the record name, found already in place, durable with its
// directory before a caller relies on it (safefile.Root.Durable).
func (d *dirHandle) durable(name string) error { return d.root.Durable(name, d.private(0)) }

// remove unlinks name (a record, never a lease) and fsyncs the directory.
// A missing name is success (the directory is fsynced all the same: an
// earlier removal may not be durable yet).
func (d *dirHandle) remove(name string) error {
	if err := d.root.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
