package bookkeeping

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// DefaultPath is where the installer keeps its bookkeeping.
const DefaultPath = "/etc/oac-node/installer.db"

// Bucket and key names; see the layout in the package doc.
var (
	bucketRoot          = []byte("oac-node-installer")
	keyVersion          = []byte("version")
	bucketInstallations = []byte("installations")
	bucketAccount       = []byte("account")
	keyAccount          = []byte("record")
	bucketGroups        = []byte("groups")
	bucketFiles         = []byte("files")
	bucketNetworks      = []byte("networks")
)

// openTimeout bounds the wait for bbolt's file lock (it waits forever
// without one).
var openTimeout = 10 * time.Second

// DB is the open bookkeeping database. It is safe for concurrent use; the
// caller closes it.
type DB struct {
	db   *bolt.DB
	path string
}

// Open opens (creating it with mode 0600) the bookkeeping database at path
// and brings its schema up to date. The directory must exist. A symbolic
// link or other non-regular file at path is refused; an existing file with
// a wider mode is narrowed to 0600. Another process holding the database
// open makes Open fail with ErrBusy after a timeout.
//
// bbolt fsyncs the file only, never its directory: Open fsyncs the
// directory once the schema is in place, so a new database's name is as
// durable as its contents. It does so for a database found in place as
// well, which an earlier run may have created without that fsync.
func Open(path string) (*DB, error) {
	if fi, err := os.Lstat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("open installer bookkeeping %s: not a regular file", path)
		}
		if heldNothing(path) {
			// An earlier first run stopped while creating it (a full
			// disk, a crash): no record was ever in it, so it is made
			// anew rather than refused as damaged.
			if err := os.Remove(path); err != nil {
				return nil, fmt.Errorf("open installer bookkeeping %s: replace the file an interrupted first run left: %w", path, err)
			}
			return Open(path)
		}
		if err := checkFile(path); err != nil {
			return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
		}
		if fi.Mode().Perm() != 0o600 {
			if err := os.Chmod(path, 0o600); err != nil {
				return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
	}
	bdb, err := openBolt(path, &bolt.Options{Timeout: openTimeout})
	if err != nil {
		return nil, err
	}
	db := &DB{db: bdb, path: path}
	if err := db.migrate(len(migrations)); err != nil {
		bdb.Close()
		return nil, err
	}
	if err := safefile.SyncDir(filepath.Dir(path)); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
	}
	return db, nil
}

// openBolt opens the file with bbolt and checks its pages: damage is an
// error (ErrDamaged), never a crash. Another process holding the file past
// the timeout is ErrBusy.
func openBolt(path string, o *bolt.Options) (*bolt.DB, error) {
	var bdb *bolt.DB
	err := guard(func() (err error) {
		bdb, err = bolt.Open(path, 0o600, o)
		return err
	})
	switch {
	case errors.Is(err, bolt.ErrTimeout):
		return nil, fmt.Errorf("open installer bookkeeping %s: %w (waited %s)", path, ErrBusy, o.Timeout)
	case errors.Is(err, bolt.ErrInvalid), errors.Is(err, bolt.ErrChecksum), errors.Is(err, bolt.ErrVersionMismatch):
		return nil, fmt.Errorf("open installer bookkeeping %s: %w: %v", path, ErrDamaged, err)
	case err != nil:
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
	}
	if err := checkPages(bdb); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
	}
	return bdb, nil
}

// Path returns the database file name.
func (db *DB) Path() string { return db.path }

// Close closes the database, releasing its file lock.
func (db *DB) Close() error {
	if err := db.db.Close(); err != nil {
		return fmt.Errorf("close installer bookkeeping %s: %w", db.path, err)
	}
	return nil
}

// update runs fn in one read-write transaction on the root bucket.
func (db *DB) update(fn func(root *bolt.Bucket) error) error {
	return guard(func() error {
		return db.db.Update(func(tx *bolt.Tx) error {
			root := tx.Bucket(bucketRoot)
			if root == nil {
				return fmt.Errorf("%w: %s has no root bucket", ErrDamaged, db.path)
			}
			return fn(root)
		})
	})
}

// view runs fn in one read-only transaction on the root bucket.
func (db *DB) view(fn func(root *bolt.Bucket) error) error {
	return guard(func() error {
		return db.db.View(func(tx *bolt.Tx) error {
			root := tx.Bucket(bucketRoot)
			if root == nil {
				return fmt.Errorf("%w: %s has no root bucket", ErrDamaged, db.path)
			}
			return fn(root)
		})
	})
}

// bucket returns a bucket the schema guarantees.
func bucket(root *bolt.Bucket, name []byte) (*bolt.Bucket, error) {
	b := root.Bucket(name)
	if b == nil {
		return nil, fmt.Errorf("%w: no %q bucket", ErrDamaged, name)
	}
	return b, nil
}

// get decodes the value at key into v, reporting whether it exists. The
// decoded value owns its memory, so it outlives the transaction.
func get(b *bolt.Bucket, key []byte, v any) (bool, error) {
	data := b.Get(key)
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return false, fmt.Errorf("%w: decode %q: %v", ErrDamaged, key, err)
	}
	return true, nil
}

// put encodes v as JSON at key.
func put(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %q: %w", key, err)
	}
	return b.Put(key, data)
}

// now is the time recorded in new records; tests may fix it.
var now = func() time.Time { return time.Now().UTC().Truncate(time.Second) }
