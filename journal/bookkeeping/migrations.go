package bookkeeping

import (
	"encoding/json"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// A migration brings the schema from version (its index) to its index+1.
type migration struct {
	name string
	run  func(root *bolt.Bucket) error
}

// migrations are applied in order; the schema version is how many have
// been. Append only.
var migrations = []migration{
	{"create the installations, account, groups and files buckets", migrateCreateBuckets},
	{"move each installation's Docker network into the networks bucket", migrateNetworksBucket},
}

// migrate applies the missing migrations up to version target in one
// Update, together with the new version.
func (db *DB) migrate(target int) error {
	err := db.db.Update(func(tx *bolt.Tx) error {
		root, err := tx.CreateBucketIfNotExists(bucketRoot)
		if err != nil {
			return err
		}
		version, err := schemaVersion(root)
		if err != nil {
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("%w: schema version %d, this program knows %d", ErrNewer, version, len(migrations))
		}
		for v := version; v < target; v++ {
			if err := migrations[v].run(root); err != nil {
				return fmt.Errorf("migrate to version %d (%s): %w", v+1, migrations[v].name, err)
			}
		}
		if version >= target {
			return nil
		}
		return root.Put(keyVersion, []byte(strconv.Itoa(target)))
	})
	if err != nil {
		return fmt.Errorf("open installer bookkeeping %s: %w", db.path, err)
	}
	return nil
}

// schemaVersion reads the version key; a missing key is version 0.
func schemaVersion(root *bolt.Bucket) (int, error) {
	v := root.Get(keyVersion)
	if v == nil {
		return 0, nil
	}
	n, err := strconv.Atoi(string(v))
	if err != nil || n < 0 {
		return 0, fmt.Errorf("bad schema version %q", v)
	}
	return n, nil
}

// Version 1: the initial buckets. An installation record carried its Docker
// network's name in "docker_network".
func migrateCreateBuckets(root *bolt.Bucket) error {
	for _, name := range [][]byte{bucketInstallations, bucketAccount, bucketGroups, bucketFiles} {
		if _, err := root.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("create bucket %q: %w", name, err)
		}
	}
	return nil
}

// Version 2: networks become records of their own (name → owner
// installation), so that one installation's network is found by name and
// removed on its own; the installation records lose "docker_network".
func migrateNetworksBucket(root *bolt.Bucket) error {
	nets, err := root.CreateBucketIfNotExists(bucketNetworks)
	if err != nil {
		return fmt.Errorf("create bucket %q: %w", bucketNetworks, err)
	}
	insts, err := bucket(root, bucketInstallations)
	if err != nil {
		return err
	}
	type rewrite struct {
		key, inst []byte
		name, net []byte
	}
	// Collect first: a bucket must not change while ForEach walks it.
	var todo []rewrite
	err = insts.ForEach(func(k, v []byte) error {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(v, &rec); err != nil {
			return fmt.Errorf("decode installation %q: %w", k, err)
		}
		raw, ok := rec["docker_network"]
		if !ok {
			return nil
		}
		delete(rec, "docker_network")
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return fmt.Errorf("decode installation %q: docker_network: %w", k, err)
		}
		r := rewrite{key: append([]byte(nil), k...)}
		if r.inst, err = json.Marshal(rec); err != nil {
			return err
		}
		if name != "" {
			net := map[string]json.RawMessage{"installation_id": mustJSON(string(k))}
			if created, ok := rec["created"]; ok {
				net["created"] = created
			}
			r.name = []byte(name)
			if r.net, err = json.Marshal(net); err != nil {
				return err
			}
		}
		todo = append(todo, r)
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range todo {
		if r.name != nil {
			if err := nets.Put(r.name, r.net); err != nil {
				return err
			}
		}
		if err := insts.Put(r.key, r.inst); err != nil {
			return err
		}
	}
	return nil
}

func mustJSON(v any) json.RawMessage {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return data
}
