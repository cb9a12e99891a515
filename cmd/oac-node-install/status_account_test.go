package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/status"
)

// An account oac-node that is not the one the bookkeeping records (uid
// 65534 here) needs attention: status exits 2 with the recovery as its
// next step, shows it in --json, and reads no node root as an account
// that is not the node's.
func TestStatusShowsAnAccountNotRecorded(t *testing.T) {
	uninstall := "sudo oac-node-install --uninstall --installation-id " + testID + " --force"
	for _, tc := range []struct {
		name   string
		passwd string
		want   []string
		not    []string
	}{
		{"deleted", "root:x:0:0::/root:/bin/sh\n",
			[]string{"the account oac-node is gone", "belong to uid 65534", "sudo useradd --system --no-log-init --uid 65534 --user-group", uninstall}, nil},
		{"deleted, its uid reused", "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n",
			[]string{"the account oac-node is gone", "which now belongs to the account nobody", uninstall}, []string{"useradd"}},
		{"made again with another uid", "root:x:0:0::/root:/bin/sh\noac-node:x:65533:65534::/var/lib/oac-node:/usr/sbin/nologin\n",
			[]string{"the account oac-node has uid 65533 and gid 65534", "deleted and made again", "sudo usermod --uid 65534 oac-node", uninstall}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newStatusHost(t)
			must(t, os.WriteFile(filepath.Join(h.root, "etc/passwd"), []byte(tc.passwd), 0o644))
			code, out, errOut := runOn(t, h.root, "status")
			if code != exitAttention {
				t.Fatalf("exit %d, want %d:\n%s%s", code, exitAttention, out, errOut)
			}
			next := ""
			for _, l := range strings.Split(out, "\n") {
				if s, ok := strings.CutPrefix(l, "  next:          "); ok {
					next = s
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(next, w) {
					t.Errorf("next lacks %q: %q", w, next)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(next, n) {
					t.Errorf("next names %q: %q", n, next)
				}
			}
			if strings.Contains(out, "registration:") || strings.Contains(out, h.node.Root+":") {
				t.Errorf("a node root was read:\n%s", out)
			}
			doc, _ := statusDoc(t, h.root, exitAttention)
			s := doc.Installations[0]
			if s.Condition != status.ConditionAttention || s.Next != next || s.Bookkeeping == nil || s.Bookkeeping.AccountMismatch != next || s.Registration != nil {
				t.Errorf("JSON: condition %s next %q bookkeeping %+v registration %+v", s.Condition, s.Next, s.Bookkeeping, s.Registration)
			}
		})
	}
}
