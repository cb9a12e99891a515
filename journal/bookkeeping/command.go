package bookkeeping

import (
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// keyCommand is the root bucket's record of the command's copy on the
// host. It is optional and needs no migration: an installer that does not
// know it never reads it, so every reader of schema version 2 still opens
// the database.
var keyCommand = []byte("command")

// Command is the root-owned copy of the installer the last install run
// left on the host (CONTRACT §10, "The command on the host").
type Command struct {
	Path    string    `json:"path"`
	SHA256  string    `json:"sha256"`
	Version string    `json:"version"`
	Written time.Time `json:"written"`
	// File is the copy's inode as it was once written, or nil when not
	// yet recorded: while the file there has this stamp, SHA256 still
	// describes its bytes (a write, truncate, rename over or utimes
	// changes the change time), so a rerun compares the file with its
	// own bytes and hashes neither (the index's stat cache, as git's).
	File *FileStamp `json:"file,omitempty"`
}

// FileStamp identifies a file's inode and its last change.
type FileStamp struct {
	Dev     uint64 `json:"dev"`
	Ino     uint64 `json:"ino"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtime_ns"`
	CtimeNs int64  `json:"ctime_ns"`
}

// SetCommand records c as the command's copy on the host.
func (db *DB) SetCommand(c Command) error {
	if !filepath.IsAbs(c.Path) || filepath.Clean(c.Path) != c.Path {
		return fmt.Errorf("record the command %q: not an absolute clean path", c.Path)
	}
	if c.Written.IsZero() {
		c.Written = now()
	}
	if err := db.update(func(root *bolt.Bucket) error { return put(root, keyCommand, c) }); err != nil {
		return fmt.Errorf("record the command %s: %w", c.Path, err)
	}
	return nil
}

// GetCommand returns the recorded copy of the command; ok is false when
// none is recorded.
func (db *DB) GetCommand() (c Command, ok bool, err error) {
	err = db.view(func(root *bolt.Bucket) error {
		ok, err = get(root, keyCommand, &c)
		return err
	})
	return c, ok, err
}

// ForgetCommand removes the record of the command's copy.
func (db *DB) ForgetCommand() error {
	return db.update(func(root *bolt.Bucket) error { return root.Delete(keyCommand) })
}
