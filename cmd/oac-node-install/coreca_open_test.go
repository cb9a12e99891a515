package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/workflow"
)

// TestReadCAFollowsNoLinkOthersCouldPlace: --core-ca is read only through
// directories nobody but root can change, walked from / without following
// a link: a link to a secret of root's (the service account's /etc/shadow
// link), a file in a directory a user owns or anybody can write, a file a
// user owns, and a link in the middle of the path are refused with advice
// that names a copy root makes; a root-owned file in a root-owned directory
// (also under the sticky /tmp) is read.
func TestReadCAFollowsNoLinkOthersCouldPlace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("skip: the ownership checks need root to create files of root's and of another uid")
	}
	const pem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
	base := t.TempDir() // /tmp/... root's, 0700, in the sticky /tmp
	secret := filepath.Join(base, "secret")
	must(t, os.WriteFile(secret, []byte("root's secret"), 0o600))
	good := filepath.Join(base, "ca.pem")
	must(t, os.WriteFile(good, []byte(pem), 0o644))

	userDir := filepath.Join(base, "user")
	must(t, os.Mkdir(userDir, 0o755))
	must(t, os.Chown(userDir, 12345, 12345))
	userLink := filepath.Join(userDir, "ca.pem")
	must(t, os.Symlink(secret, userLink))
	inUserDir := filepath.Join(userDir, "real.pem")
	must(t, os.WriteFile(inUserDir, []byte(pem), 0o644))

	open := filepath.Join(base, "open")
	must(t, os.Mkdir(open, 0o755))
	must(t, os.Chmod(open, 0o777))
	inOpen := filepath.Join(open, "ca.pem")
	must(t, os.WriteFile(inOpen, []byte(pem), 0o644))

	userFile := filepath.Join(base, "users.pem")
	must(t, os.WriteFile(userFile, []byte(pem), 0o644))
	must(t, os.Chown(userFile, 12345, 12345))

	rootLink := filepath.Join(base, "link.pem")
	must(t, os.Symlink(good, rootLink))
	dirLink := filepath.Join(base, "dirlink")
	must(t, os.Symlink(base, dirLink))

	for _, c := range []struct{ path, want string }{
		{userLink, "user is owned by uid 12345"},
		{inUserDir, "user is owned by uid 12345"},
		{inOpen, "in a directory anybody can write"},
		{userFile, "is owned by uid 12345"},
		{rootLink, "is a symbolic link"},
		{filepath.Join(dirLink, "ca.pem"), "is a symbolic link"},
	} {
		data, err := readCA(c.path)
		if err == nil {
			t.Errorf("%s read (%q)", c.path, data)
			continue
		}
		msg := workflow.Message(err)
		for _, want := range []string{c.want, "sudo install -m 0644 <file> /root/core-ca.pem", "Nothing was changed."} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: %q lacks %q", c.path, msg, want)
			}
		}
		if strings.Contains(msg, "root's secret") {
			t.Errorf("%s: the refusal shows the secret", c.path)
		}
	}
	data, err := readCA(good)
	if err != nil || string(data) != pem {
		t.Fatalf("readCA(%s) = %q, %v", good, data, err)
	}
}
