package accounts

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// databasesWith writes passwd and group under a new root.
func databasesWith(t *testing.T, passwd, group string) Databases {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"passwd": passwd, "group": group} {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return Under(root)
}

func TestLookupUserID(t *testing.T) {
	db := databasesWith(t, "root:x:0:0::/root:/bin/sh\nbroken:x:nan:1::/:/bin/sh\nalice:x:998:1000::/home/alice:/bin/bash\n", "")
	u, err := db.LookupUserID(998)
	if err != nil || u.Name != "alice" || u.GID != 1000 {
		t.Fatalf("%+v %v", u, err)
	}
	if _, err := db.LookupUserID(997); err == nil {
		t.Fatal("a free uid was found")
	}
}

// The host's oac-node account against the recorded one: the same ids
// agree; a gone account or one with other ids is a mismatch, naming who
// holds the recorded uid and, when the ids are free, the commands that
// give them back.
func TestCheckRecorded(t *testing.T) {
	const (
		root    = "root:x:0:0::/root:/bin/sh\n"
		node    = "oac-node:x:998:997::/var/lib/oac-node:/usr/sbin/nologin\n"
		groups  = "root:x:0:\ndocker:x:990:oac-node\n"
		ownGrp  = "oac-node:x:997:\n"
		nologin = "--no-create-home --home-dir /var/lib/oac-node --shell "
	)
	shell := NologinShells[0]
	if sh, err := FindNologin(); err == nil {
		shell = sh
	}
	rec := Recorded{UID: 998, GID: 997, Created: true}
	for _, tc := range []struct {
		name          string
		passwd, group string
		rec           Recorded
		agree         bool
		now           int // the account's uid now, -1 when gone
		holder        string
		recreate      []string
		problem       []string
	}{
		{name: "the recorded account", passwd: root + node, group: groups + ownGrp, rec: rec, agree: true},
		{name: "gid not recorded", passwd: root + node, group: groups + ownGrp, rec: Recorded{UID: 998}, agree: true},
		{name: "gone with its group", passwd: root, group: groups, rec: rec, now: -1,
			recreate: []string{"groupadd --system --gid 997 oac-node", "useradd --system --no-log-init --uid 998 --gid 997 " + nologin + shell + " oac-node"},
			problem:  []string{"the account oac-node is gone", "created it with uid 998 and gid 997", "belong to uid 998"}},
		{name: "gone, its group kept", passwd: root, group: groups + ownGrp, rec: rec, now: -1,
			recreate: []string{"useradd --system --no-log-init --uid 998 --gid 997 " + nologin + shell + " oac-node"}},
		{name: "gone, its gid another group's", passwd: root, group: groups + "alice:x:997:\n", rec: rec, now: -1},
		{name: "gone, its group with another gid", passwd: root, group: groups + "oac-node:x:500:\n", rec: rec, now: -1},
		{name: "gone, gid not recorded", passwd: root, group: groups, rec: Recorded{UID: 998, Created: true}, now: -1,
			recreate: []string{"useradd --system --no-log-init --uid 998 --user-group " + nologin + shell + " oac-node"}},
		{name: "gone, uid reused", passwd: root + "alice:x:998:1000::/home/alice:/bin/bash\n", group: groups, rec: rec, now: -1, holder: "alice",
			problem: []string{"gone", "which now belongs to the account alice"}},
		{name: "adopted and gone", passwd: root, group: groups, rec: Recorded{UID: 998, GID: 997}, now: -1,
			recreate: []string{"groupadd --system --gid 997 oac-node", "useradd --system --no-log-init --uid 998 --gid 997 " + nologin + shell + " oac-node"},
			problem:  []string{"adopted it with uid 998"}},
		{name: "made again with other ids", passwd: root + "oac-node:x:996:995::/var/lib/oac-node:/usr/sbin/nologin\n", group: groups + "oac-node:x:995:\n", rec: rec, now: 996,
			recreate: []string{"usermod --uid 998 oac-node", "groupmod --gid 997 oac-node"},
			problem:  []string{"has uid 996 and gid 995", "deleted and made again", "belong to uid 998"}},
		{name: "made again with another gid", passwd: root + "oac-node:x:998:995::/var/lib/oac-node:/usr/sbin/nologin\n", group: groups + "oac-node:x:995:\n", rec: rec, now: 998,
			recreate: []string{"groupmod --gid 997 oac-node"}},
		{name: "made again, the recorded uid another's", passwd: root + "alice:x:998:1000::/home/alice:/bin/bash\noac-node:x:996:995::/var/lib/oac-node:/usr/sbin/nologin\n",
			group: groups + "oac-node:x:995:\n", rec: rec, now: 996, holder: "alice"},
		{name: "made again, the recorded gid another group's", passwd: root + "oac-node:x:996:995::/var/lib/oac-node:/usr/sbin/nologin\n",
			group: groups + "oac-node:x:995:\nalice:x:997:\n", rec: rec, now: 996},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := databasesWith(t, tc.passwd, tc.group).CheckRecorded(tc.rec)
			if err != nil {
				t.Fatal(err)
			}
			if tc.agree {
				if m != nil {
					t.Fatalf("a mismatch: %+v", m)
				}
				return
			}
			if m == nil {
				t.Fatal("no mismatch")
			}
			if (m.Now == nil) != (tc.now < 0) || (m.Now != nil && m.Now.UID != tc.now) {
				t.Errorf("now %+v, want uid %d", m.Now, tc.now)
			}
			if m.UIDHolder != tc.holder {
				t.Errorf("holder %q, want %q", m.UIDHolder, tc.holder)
			}
			if !reflect.DeepEqual(m.Recreate, tc.recreate) {
				t.Errorf("recreate\n got %q\nwant %q", m.Recreate, tc.recreate)
			}
			if want := strings.Join(prefixed(tc.recreate), " && "); m.RecreateCommand() != want {
				t.Errorf("command %q, want %q", m.RecreateCommand(), want)
			}
			for _, p := range tc.problem {
				if !strings.Contains(m.Problem(), p) {
					t.Errorf("the problem lacks %q: %s", p, m.Problem())
				}
			}
		})
	}
}

func prefixed(cmds []string) []string {
	var out []string
	for _, c := range cmds {
		out = append(out, "sudo "+c)
	}
	return out
}
