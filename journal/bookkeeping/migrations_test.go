package bookkeeping

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// openAt opens a raw database file brought to schema version v only.
func openAt(t *testing.T, path string, v int) *DB {
	t.Helper()
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db := &DB{db: bdb, path: path}
	if err := db.migrate(v); err != nil {
		bdb.Close()
		t.Fatal(err)
	}
	return db
}

func buckets(t *testing.T, path string) map[string]bool {
	t.Helper()
	got := map[string]bool{}
	withBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketRoot).ForEachBucket(func(k []byte) error {
			got[string(k)] = true
			return nil
		})
	})
	return got
}

// Version 0 (an empty file) → 1: the initial buckets.
func TestMigrationCreateBuckets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "installer.db")
	openAt(t, path, 1).db.Close()
	if v := readVersion(t, path); v != "1" {
		t.Fatalf("version %q", v)
	}
	got := buckets(t, path)
	for _, name := range []string{"installations", "account", "groups", "files"} {
		if !got[name] {
			t.Errorf("no %s bucket", name)
		}
	}
	if got["networks"] {
		t.Error("networks bucket exists at version 1")
	}
}

// Version 1 → 2: networks leave the installation records for their own
// bucket; other fields and installations without a network are kept.
func TestMigrationNetworksBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "installer.db")
	openAt(t, path, 1).db.Close()
	v1 := map[string]string{
		"a": `{"installation_id":"a","provider":"docker","core_url":"https://core.example","docker_network":"oac-node-a","created":"2026-01-02T03:04:05Z","future":1}`,
		"b": `{"installation_id":"b","provider":"microsandbox","created":"2026-01-02T03:04:05Z"}`,
		"c": `{"installation_id":"c","provider":"docker","docker_network":""}`,
	}
	withBolt(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRoot).Bucket(bucketInstallations)
		for k, v := range v1 {
			if err := b.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		return nil
	})

	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	nets, err := db.Networks("")
	if err != nil {
		t.Fatal(err)
	}
	want := Network{Name: "oac-node-a", InstallationID: "a", Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if len(nets) != 1 || nets[0] != want {
		t.Fatalf("networks %+v", nets)
	}
	a, err := db.GetInstallation("a")
	if err != nil {
		t.Fatal(err)
	}
	if a.CoreURL != "https://core.example" || a.Provider != "docker" {
		t.Fatalf("installation a %+v", a)
	}
	list, err := db.ListInstallations()
	if err != nil || len(list) != 3 {
		t.Fatalf("installations %+v %v", list, err)
	}
	db.Close()

	if v := readVersion(t, path); v != "2" {
		t.Fatalf("version %q", v)
	}
	withBolt(t, path, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRoot).Bucket(bucketInstallations)
		for _, k := range []string{"a", "b", "c"} {
			var rec map[string]json.RawMessage
			if err := json.Unmarshal(b.Get([]byte(k)), &rec); err != nil {
				t.Fatal(err)
			}
			if _, ok := rec["docker_network"]; ok {
				t.Errorf("installation %s still has docker_network", k)
			}
			if k == "a" && string(rec["future"]) != "1" {
				t.Errorf("installation a lost a field: %s", b.Get([]byte(k)))
			}
		}
		return nil
	})
}

// Opening an up-to-date database changes nothing.
func TestMigrationIdempotent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "installer.db")
	db := openAt(t, path, len(migrations))
	must(t, db.PutInstallation(Installation{ID: "a"}))
	must(t, db.AddNetwork("n", "a"))
	db.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if nets, _ := db.Networks("a"); len(nets) != 1 {
		t.Fatalf("networks %+v", nets)
	}
}
