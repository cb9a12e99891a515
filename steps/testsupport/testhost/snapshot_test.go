package testhost

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSnapshotSeesChanges(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "passwd")
	tree := filepath.Join(dir, "system")
	os.WriteFile(file, []byte("root:x:0:0::/root:/bin/sh\n"), 0o644)
	os.MkdirAll(filepath.Join(tree, "multi-user.target.wants"), 0o755)
	os.Symlink("/lib/systemd/system/a.service", filepath.Join(tree, "multi-user.target.wants/a.service"))
	logs := filepath.Join(dir, "log")
	os.MkdirAll(filepath.Join(logs, "journal"), 0o755)
	os.WriteFile(filepath.Join(logs, "lastlog"), nil, 0o664)
	os.WriteFile(filepath.Join(logs, "dpkg.log"), []byte("x\n"), 0o644)
	saved, savedLog := watched, logDir
	watched, logDir = []string{file, tree, filepath.Join(dir, "oac-node")}, logs
	defer func() { watched, logDir = saved, savedLog }()
	for _, tc := range []struct {
		name   string
		change func()
		want   string
	}{
		{"nothing", func() {}, ""},
		{"file content", func() {
			os.WriteFile(file, []byte("root:x:0:0::/root:/bin/sh\noac-node:x:998:998::/var/lib/oac-node:/usr/sbin/nologin\n"), 0o644)
		}, file + ": was"},
		{"new unit", func() { os.WriteFile(filepath.Join(tree, "oac-node-x.service"), nil, 0o644) }, "oac-node-x.service: new"},
		{"link retargeted", func() {
			l := filepath.Join(tree, "multi-user.target.wants/a.service")
			os.Remove(l)
			os.Symlink("/etc/systemd/system/a.service", l)
		}, "-> /etc/systemd/system/a.service"},
		{"records directory made", func() { os.Mkdir(filepath.Join(dir, "oac-node"), 0o755) }, "oac-node: was absent"},
		{"mode", func() { os.Chmod(file, 0o600) }, "-rw-------"},
		{"lastlog grown", func() { os.Truncate(filepath.Join(logs, "lastlog"), 292*999) }, "lastlog: was"},
		{"faillog made", func() { os.WriteFile(filepath.Join(logs, "faillog"), make([]byte, 64), 0o644) }, "faillog: was absent"},
		{"new log file", func() { os.WriteFile(filepath.Join(logs, "oac-node.log"), nil, 0o644) }, "oac-node.log: new"},
		{"a log grows", func() { os.WriteFile(filepath.Join(logs, "dpkg.log"), []byte("x\ny\n"), 0o644) }, ""},
		{"the journal writes", func() { os.WriteFile(filepath.Join(logs, "journal/system.journal"), nil, 0o640) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, err := TakeSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			tc.change()
			after, err := TakeSnapshot()
			if err != nil {
				t.Fatal(err)
			}
			d := strings.Join(before.Diff(after), "\n")
			if (tc.want == "") != (d == "") || !strings.Contains(d, tc.want) {
				t.Fatalf("diff %q, want one with %q", d, tc.want)
			}
		})
	}
}
