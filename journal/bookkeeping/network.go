package bookkeeping

import (
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// Network is a Docker network the installer created for one installation.
type Network struct {
	Name           string               `json:"-"`
	InstallationID ident.InstallationID `json:"installation_id"`
	Created        time.Time            `json:"created"`
	// Unlabelled is set for a network the platform's installer created
	// (without this installer's labels) and a takeover recorded; a record
	// without the key is a labelled network of this installer's.
	Unlabelled bool `json:"unlabelled,omitempty"`
}

// AddNetwork records that the installer created the Docker network name
// for installationID, which must be recorded (else ErrNotFound). Recording
// it again keeps the first record; a network recorded for another
// installation is refused with ErrOwned.
func (db *DB) AddNetwork(name string, installationID ident.InstallationID) error {
	if name == "" {
		return fmt.Errorf("record network: empty name")
	}
	err := db.update(func(root *bolt.Bucket) error {
		if err := requireInstallation(root, installationID); err != nil {
			return err
		}
		b, err := bucket(root, bucketNetworks)
		if err != nil {
			return err
		}
		var old Network
		found, err := get(b, []byte(name), &old)
		if err != nil {
			return err
		}
		if found {
			if old.InstallationID != installationID {
				return fmt.Errorf("%w %q", ErrOwned, old.InstallationID)
			}
			return nil
		}
		return put(b, []byte(name), Network{InstallationID: installationID, Created: now()})
	})
	if err != nil {
		return fmt.Errorf("record network %q: %w", name, err)
	}
	return nil
}

// Networks returns the networks recorded for installationID (every network
// when it is empty), ordered by name.
func (db *DB) Networks(installationID ident.InstallationID) ([]Network, error) {
	var list []Network
	err := db.view(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketNetworks)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			n := Network{Name: string(k)}
			if _, err := get(b, k, &n); err != nil {
				return err
			}
			if installationID == "" || n.InstallationID == installationID {
				list = append(list, n)
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list networks: %w", err)
	}
	return list, nil
}

// RemoveNetwork forgets the network name, after the network itself was
// removed; a missing record is not an error.
func (db *DB) RemoveNetwork(name string) error {
	err := db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketNetworks)
		if err != nil {
			return err
		}
		return b.Delete([]byte(name))
	})
	if err != nil {
		return fmt.Errorf("forget network %q: %w", name, err)
	}
	return nil
}
