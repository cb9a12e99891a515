package bookkeeping

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// Installation is one node installed on this host.
type Installation struct {
	ID                  ident.InstallationID `json:"installation_id"`
	Provider            string               `json:"provider"`
	CoreURL             string               `json:"core_url"`
	NodeRoot            string               `json:"node_root"`
	Unit                string               `json:"unit"`
	EnvFile             string               `json:"env_file"`
	AllowInsecureOrigin bool                 `json:"allow_insecure_origin,omitempty"`
	CoreCA              string               `json:"core_ca,omitempty"`
	// SourceURL (the console's origin) or Bundle (an offline bundle's
	// directory) is where the installation's files came from, recorded so
	// that a rerun needs only the installation id. Both are empty for an
	// installation recorded before they were, or taken over from the
	// platform's installer, until a run given the source records it.
	SourceURL string `json:"source_url,omitempty"`
	Bundle    string `json:"bundle,omitempty"`
	// Registered is set once the install workflow's register step is
	// done: Core enrolled the node. It is root's record of that fact
	// (the node root's registered.json is the account's).
	Registered bool `json:"registered,omitempty"`
	// Platform is set when a takeover recorded the installation: the
	// platform's installer made the node (CONTRACT §11). Once recorded it
	// stays.
	Platform bool      `json:"platform,omitempty"`
	Created  time.Time `json:"created"`
}

// PutInstallation records inst, replacing an earlier record of the same
// id. Created is kept from the earlier record, or set now if zero;
// Registered, once recorded, stays (MarkRegistered).
func (db *DB) PutInstallation(inst Installation) error {
	if inst.ID == "" {
		return fmt.Errorf("record installation: empty id")
	}
	err := db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketInstallations)
		if err != nil {
			return err
		}
		var old Installation
		found, err := get(b, []byte(inst.ID), &old)
		if err != nil {
			return err
		}
		switch {
		case found && !old.Created.IsZero():
			inst.Created = old.Created
		case inst.Created.IsZero():
			inst.Created = now()
		}
		inst.Registered = inst.Registered || (found && old.Registered)
		inst.Platform = inst.Platform || (found && old.Platform)
		return put(b, []byte(inst.ID), inst)
	})
	if err != nil {
		return fmt.Errorf("record installation %q: %w", inst.ID, err)
	}
	return nil
}

// MarkRegistered records that installation id registered with Core; a
// record that says so already is left as it is (no write). An unrecorded
// id is ErrNotFound.
func (db *DB) MarkRegistered(id ident.InstallationID) error {
	inst, err := db.GetInstallation(id)
	if err != nil || inst.Registered {
		return err
	}
	err = db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketInstallations)
		if err != nil {
			return err
		}
		var cur Installation
		found, err := get(b, []byte(id), &cur)
		if err != nil {
			return err
		}
		if !found {
			return ErrNotFound
		}
		cur.Registered = true
		return put(b, []byte(id), cur)
	})
	if err != nil {
		return fmt.Errorf("record installation %q registered: %w", id, err)
	}
	return nil
}

// GetInstallation returns the installation id, or ErrNotFound.
func (db *DB) GetInstallation(id ident.InstallationID) (Installation, error) {
	var inst Installation
	err := db.view(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketInstallations)
		if err != nil {
			return err
		}
		found, err := get(b, []byte(id), &inst)
		if err == nil && !found {
			err = ErrNotFound
		}
		return err
	})
	if err != nil {
		return Installation{}, fmt.Errorf("installation %q: %w", id, err)
	}
	return inst, nil
}

// ListInstallations returns every installation, ordered by id.
func (db *DB) ListInstallations() ([]Installation, error) {
	var list []Installation
	err := db.view(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketInstallations)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			var inst Installation
			if _, err := get(b, k, &inst); err != nil {
				return err
			}
			list = append(list, inst)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list installations: %w", err)
	}
	return list, nil
}

// DeleteInstallation removes the installation's record. It refuses with
// ErrInUse while files or networks are still recorded for it; a missing
// record is not an error, so uninstall can be rerun.
func (db *DB) DeleteInstallation(id ident.InstallationID) error {
	err := db.update(func(root *bolt.Bucket) error {
		for _, name := range [][]byte{bucketFiles, bucketNetworks} {
			b, err := bucket(root, name)
			if err != nil {
				return err
			}
			n, err := countOwned(b, id)
			if err != nil {
				return err
			}
			if n > 0 {
				return fmt.Errorf("%w (%d in %s)", ErrInUse, n, name)
			}
		}
		b, err := bucket(root, bucketInstallations)
		if err != nil {
			return err
		}
		return b.Delete([]byte(id))
	})
	if err != nil {
		return fmt.Errorf("delete installation %q: %w", id, err)
	}
	return nil
}

// owned is the part of file and network records that names the owner.
type owned struct {
	InstallationID ident.InstallationID `json:"installation_id"`
}

// countOwned counts the records in b owned by id.
func countOwned(b *bolt.Bucket, id ident.InstallationID) (int, error) {
	n := 0
	err := b.ForEach(func(k, v []byte) error {
		var o owned
		if _, err := get(b, k, &o); err != nil {
			return err
		}
		if o.InstallationID == id {
			n++
		}
		return nil
	})
	return n, err
}

// requireInstallation fails with ErrNotFound unless id is recorded.
func requireInstallation(root *bolt.Bucket, id ident.InstallationID) error {
	b, err := bucket(root, bucketInstallations)
	if err != nil {
		return err
	}
	if b.Get([]byte(id)) == nil {
		return fmt.Errorf("installation %q: %w", id, ErrNotFound)
	}
	return nil
}
