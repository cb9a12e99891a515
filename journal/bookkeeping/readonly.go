package bookkeeping

import (
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// OpenReadOnly opens an existing bookkeeping database for reading only: it
// never creates, migrates, narrows or writes the file (Open's migration
// commits a transaction even when the schema is current), so a command
// that must change nothing, such as the check command, can read it. An
// older schema is read as it is (not migrated); a newer one is refused
// (ErrNewer). A symbolic link or other non-regular file is refused.
func OpenReadOnly(path string) (*DB, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("open installer bookkeeping %s: not a regular file", path)
	}
	if heldNothing(path) {
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, ErrHoldsNothing)
	}
	if err := checkFile(path); err != nil {
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
	}
	bdb, err := openBolt(path, &bolt.Options{Timeout: openTimeout, ReadOnly: true})
	if err != nil {
		return nil, err
	}
	db := &DB{db: bdb, path: path}
	var version int
	err = db.view(func(root *bolt.Bucket) error {
		version, err = schemaVersion(root)
		return err
	})
	if err == nil && version > len(migrations) {
		err = fmt.Errorf("%w: schema version %d, this program knows %d", ErrNewer, version, len(migrations))
	}
	if err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open installer bookkeeping %s: %w", path, err)
	}
	return db, nil
}
