package bookkeeping

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group is a supplementary group the installer added the account to.
type Group struct {
	Name  string    `json:"-"`
	Added time.Time `json:"added"`
}

// AddGroup records that the installer added the account to group name.
// Recording it again keeps the first record.
func (db *DB) AddGroup(name string) error {
	if name == "" {
		return fmt.Errorf("record group: empty name")
	}
	err := db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketGroups)
		if err != nil {
			return err
		}
		if b.Get([]byte(name)) != nil {
			return nil
		}
		return put(b, []byte(name), Group{Added: now()})
	})
	if err != nil {
		return fmt.Errorf("record group %q: %w", name, err)
	}
	return nil
}

// Groups returns the groups the installer added, ordered by name.
func (db *DB) Groups() ([]Group, error) {
	var list []Group
	err := db.view(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketGroups)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			g := Group{Name: string(k)}
			if _, err := get(b, k, &g); err != nil {
				return err
			}
			list = append(list, g)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list groups: %w", err)
	}
	return list, nil
}

// RemoveGroup forgets group name; a missing record is not an error.
func (db *DB) RemoveGroup(name string) error {
	err := db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketGroups)
		if err != nil {
			return err
		}
		return b.Delete([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("forget group %q: %w", name, err)
	}
	return nil
}
