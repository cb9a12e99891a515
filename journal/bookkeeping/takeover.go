package bookkeeping

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Takeover is what the platform's installer made for one node, as a
// takeover records it (CONTRACT §11, "Moving from the platform's
// installer"): the installation, the account it created or adopted, the
// groups it added, the files it wrote (host record and unit) and the
// Docker network it created without labels (empty for none).
type Takeover struct {
	Installation Installation
	Account      Account
	Groups       []string
	// Files are the platform's files of the installation (Path and Kind;
	// the installation id is Installation's).
	Files   []File
	Network string
}

// TakeOver records t in one Update transaction, so that a crash leaves
// either none of it or all of it (bbolt fsyncs the commit). It refuses
// with ErrOwned when another installation owns a file or the network, and
// when the bookkeeping already records an account: a takeover is the
// first record of a host.
func (db *DB) TakeOver(t Takeover) error {
	id := t.Installation.ID
	if id == "" || t.Account.Name == "" {
		return fmt.Errorf("record the takeover: no installation id or account name")
	}
	err := db.update(func(root *bolt.Bucket) error {
		ab, err := bucket(root, bucketAccount)
		if err != nil {
			return err
		}
		if ab.Get(keyAccount) != nil {
			return fmt.Errorf("%w: the bookkeeping records an account already", ErrOwned)
		}
		inst := t.Installation
		if inst.Created.IsZero() {
			inst.Created = now()
		}
		ib, err := bucket(root, bucketInstallations)
		if err != nil {
			return err
		}
		if err := put(ib, []byte(id), inst); err != nil {
			return err
		}
		acct := t.Account
		if acct.Recorded.IsZero() {
			acct.Recorded = now()
		}
		if err := put(ab, keyAccount, acct); err != nil {
			return err
		}
		gb, err := bucket(root, bucketGroups)
		if err != nil {
			return err
		}
		for _, g := range t.Groups {
			if err := put(gb, []byte(g), Group{Added: now()}); err != nil {
				return err
			}
		}
		fb, err := bucket(root, bucketFiles)
		if err != nil {
			return err
		}
		for _, f := range t.Files {
			var old File
			found, err := get(fb, []byte(f.Path), &old)
			if err != nil {
				return err
			}
			if found && old.InstallationID != id {
				return fmt.Errorf("file %s: %w %q", f.Path, ErrOwned, old.InstallationID)
			}
			if err := put(fb, []byte(f.Path), File{InstallationID: id, Kind: f.Kind, Created: now()}); err != nil {
				return err
			}
		}
		if t.Network != "" {
			nb, err := bucket(root, bucketNetworks)
			if err != nil {
				return err
			}
			var old Network
			found, err := get(nb, []byte(t.Network), &old)
			if err != nil {
				return err
			}
			if found && old.InstallationID != id {
				return fmt.Errorf("network %s: %w %q", t.Network, ErrOwned, old.InstallationID)
			}
			if err := put(nb, []byte(t.Network), Network{InstallationID: id, Created: now(), Unlabelled: true}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("record the takeover of installation %q: %w", id, err)
	}
	return nil
}
