package testhost

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// watched are the machine's paths a test host must leave as they were:
// the account databases, systemd's unit directory, the installer's records,
// /usr/local/sbin (the command on the host) and the kernel's core pattern (which systemd as PID 1 writes when it
// may).
var watched = []string{
	"/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow",
	"/etc/systemd/system", "/etc/oac-node", "/usr/local/sbin", "/proc/sys/kernel/core_pattern",
}

// Snapshot is what the machine's watched paths hold (see Start: the
// account databases, /etc/systemd/system, /etc/oac-node, the core
// pattern), to be saved by one process and compared by a later one: each
// path below them mapped to treetest's description (type and mode, and
// the link target or size and content hash), or "absent" for a watched
// path that is not there.
type Snapshot map[string]string

// TakeSnapshot reads the machine's watched paths.
func TakeSnapshot() (Snapshot, error) {
	s := Snapshot{}
	for _, root := range watched {
		if _, err := os.Lstat(root); errors.Is(err, fs.ErrNotExist) {
			s[root] = "absent"
			continue
		}
		tree, err := treetest.Read(root, treetest.Options{})
		if err != nil {
			return nil, err
		}
		for rel, desc := range tree {
			s[filepath.Join(root, rel)] = desc
		}
	}
	return s, nil
}

// Diff lists what differs from before to after, sorted (treetest.Diff's
// lines).
func (before Snapshot) Diff(after Snapshot) []string {
	return treetest.DiffLines(treetest.Tree(before), treetest.Tree(after))
}
