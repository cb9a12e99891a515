package bookkeeping

import (
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The account record's gid is optional: a record written without it (by
// an installer that did not record it) reads as gid 0, "not recorded",
// with its other fields; a record with it keeps it; the schema version
// stays, so that every installer reading version 2 still opens the
// database (one that does not know the field ignores it).
func TestAccountGID(t *testing.T) {
	fixedNow(t)
	path := filepath.Join(t.TempDir(), "installer.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	withBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRoot).Bucket(bucketAccount).Put(keyAccount,
			[]byte(`{"name":"oac-node","created":true,"uid":998,"recorded":"2026-01-02T03:04:05Z"}`))
	})
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	acct, ok, err := db.Account()
	if err != nil || !ok || acct.UID != 998 || acct.GID != 0 || !acct.Created {
		t.Fatalf("a record without gid: %+v %v %v", acct, ok, err)
	}
	acct.GID = 997
	must(t, db.PutAccount(acct))
	got, _, err := db.Account()
	if err != nil || got.GID != 997 || got.UID != 998 || got.Recorded != acct.Recorded {
		t.Fatalf("after recording the gid: %+v %v", got, err)
	}
	var raw string
	must(t, db.view(func(root *bolt.Bucket) error {
		raw = string(root.Bucket(bucketAccount).Get(keyAccount))
		return nil
	}))
	if !strings.Contains(raw, `"gid":997`) {
		t.Errorf("stored record %s", raw)
	}
	must(t, db.Close())
	if v := readVersion(t, path); v != "2" {
		t.Errorf("schema version %q", v)
	}
}
