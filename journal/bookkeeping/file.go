package bookkeeping

import (
	"fmt"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// Kinds of files the installer writes on the host.
const (
	FileUnit   = "unit"    // /etc/systemd/system/oac-node-<id>.service
	FileEnv    = "env"     // the unit's environment file
	FileRecord = "record"  // /etc/oac-node/<id>.json
	FileCoreCA = "core-ca" // /etc/oac-node/<id>.core-ca.pem, root's copy of --core-ca
)

// File is a host file the installer wrote for one installation.
type File struct {
	Path           string               `json:"-"`
	InstallationID ident.InstallationID `json:"installation_id"`
	Kind           string               `json:"kind"`
	Created        time.Time            `json:"created"`
}

// AddFile records that the installer wrote f.Path for f.InstallationID,
// which must be recorded (else ErrNotFound). The path must be absolute and
// clean. Recording it again for the same installation keeps the first
// record; a path recorded for another installation is refused with
// ErrOwned.
func (db *DB) AddFile(f File) error {
	if !filepath.IsAbs(f.Path) || filepath.Clean(f.Path) != f.Path {
		return fmt.Errorf("record file %q: not an absolute clean path", f.Path)
	}
	err := db.update(func(root *bolt.Bucket) error {
		if err := requireInstallation(root, f.InstallationID); err != nil {
			return err
		}
		b, err := bucket(root, bucketFiles)
		if err != nil {
			return err
		}
		var old File
		found, err := get(b, []byte(f.Path), &old)
		if err != nil {
			return err
		}
		if found {
			if old.InstallationID != f.InstallationID {
				return fmt.Errorf("%w %q", ErrOwned, old.InstallationID)
			}
			return nil
		}
		if f.Created.IsZero() {
			f.Created = now()
		}
		return put(b, []byte(f.Path), f)
	})
	if err != nil {
		return fmt.Errorf("record file %s: %w", f.Path, err)
	}
	return nil
}

// Files returns the files recorded for installationID (every file when it
// is empty), ordered by path.
func (db *DB) Files(installationID ident.InstallationID) ([]File, error) {
	var list []File
	err := db.view(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketFiles)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			f := File{Path: string(k)}
			if _, err := get(b, k, &f); err != nil {
				return err
			}
			if installationID == "" || f.InstallationID == installationID {
				list = append(list, f)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list files: %w", err)
	}
	return list, nil
}

// RemoveFile forgets path, after the file itself was removed; a missing
// record is not an error.
func (db *DB) RemoveFile(path string) error {
	err := db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketFiles)
		if err != nil {
			return err
		}
		return b.Delete([]byte(path))
	})
	if err != nil {
		return fmt.Errorf("forget file %s: %w", path, err)
	}
	return nil
}
