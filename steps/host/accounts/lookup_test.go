package accounts

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLookups(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0:root:/root:/bin/bash\n# comment\nbroken line\noac-node:x:998:997::/var/lib/oac-node:/usr/sbin/nologin\n"), 0o644)
	os.WriteFile(filepath.Join(root, "etc/group"), []byte("root:x:0:\ndocker:x:990:alice,oac-node\noac-node:x:997:\nkvm:x:991:oac-node\n"), 0o644)
	db := Under(root)
	u, err := db.LookupUser("oac-node")
	if err != nil || u.UID != 998 || u.GID != 997 || u.Home != "/var/lib/oac-node" || u.Shell != "/usr/sbin/nologin" {
		t.Fatalf("%+v %v", u, err)
	}
	if _, err := db.LookupUser("nobody-here"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("want ErrNotFound, got %v", err)
	}
	g, err := db.LookupGroup("docker")
	if err != nil || g.GID != 990 || !reflect.DeepEqual(g.Members, []string{"alice", "oac-node"}) {
		t.Fatalf("%+v %v", g, err)
	}
	gids, err := db.SupplementaryGroups("oac-node")
	if err != nil || !reflect.DeepEqual(gids, []int{990, 991}) {
		t.Fatalf("%v %v", gids, err)
	}
	if _, err := (Databases{Passwd: filepath.Join(root, "missing")}).LookupUser("x"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("a missing database is an error of its own: %v", err)
	}
}
