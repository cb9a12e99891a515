package bookkeeping

import (
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Account is the node account as the installer found or made it.
type Account struct {
	// Name is the account's login name (oac-node).
	Name string `json:"name"`
	// Created is true when the installer ran useradd, false when it
	// adopted an existing account (which uninstall then keeps).
	Created bool `json:"created"`
	// UID is the account's uid, 0 while a creation is only intended (the
	// record is written before useradd runs).
	UID int `json:"uid"`
	// GID is the account's primary gid; 0 in a record written before the
	// installer recorded it (only the uid is then known).
	GID int `json:"gid,omitempty"`
	// NoGroupBefore is true in a record of an intended creation written
	// while no group of the account's name existed: a group of that name
	// found with no account by a rerun (useradd cut off after it wrote
	// /etc/group) is then the installer's own, to remove and make anew.
	NoGroupBefore bool `json:"no_group_before,omitempty"`
	// HomeMode is an adopted account's home directory mode before the
	// installer changed it, or nil when it changed nothing.
	HomeMode *os.FileMode `json:"home_mode,omitempty"`
	// Recorded is when the account was first recorded.
	Recorded time.Time `json:"recorded"`
}

// Account returns the account record and whether there is one.
func (db *DB) Account() (Account, bool, error) {
	var acct Account
	var found bool
	err := db.view(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketAccount)
		if err != nil {
			return err
		}
		found, err = get(b, keyAccount, &acct)
		return err
	})
	if err != nil {
		return Account{}, false, fmt.Errorf("read account record: %w", err)
	}
	return acct, found, nil
}

// PutAccount records the account, replacing an earlier record. Recorded is
// kept from the earlier record, or set now if zero.
func (db *DB) PutAccount(acct Account) error {
	err := db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketAccount)
		if err != nil {
			return err
		}
		var old Account
		found, err := get(b, keyAccount, &old)
		if err != nil {
			return err
		}
		switch {
		case found && !old.Recorded.IsZero():
			acct.Recorded = old.Recorded
		case acct.Recorded.IsZero():
			acct.Recorded = now()
		}
		return put(b, keyAccount, acct)
	})
	if err != nil {
		return fmt.Errorf("record account %q: %w", acct.Name, err)
	}
	return nil
}

// DeleteAccount removes the account record; a missing one is not an error.
func (db *DB) DeleteAccount() error {
	err := db.update(func(root *bolt.Bucket) error {
		b, err := bucket(root, bucketAccount)
		if err != nil {
			return err
		}
		return b.Delete(keyAccount)
	})
	if err != nil {
		return fmt.Errorf("delete account record: %w", err)
	}
	return nil
}
