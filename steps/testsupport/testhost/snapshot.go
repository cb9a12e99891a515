package testhost

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// watched are the machine's paths a test host must leave as they were:
// the account databases, systemd's unit directory, the installer's records,
// /usr/local/sbin (the command on the host) and the kernel's core pattern (which systemd as PID 1 writes when it
// may). /var/log is compared too (snapshotLogs).
var watched = []string{
	"/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow",
	"/etc/systemd/system", "/etc/oac-node", "/usr/local/sbin", "/proc/sys/kernel/core_pattern",
}

// logDir is the machine's log directory: a test host shares it (only /etc,
// /var/lib, /run and /usr/local/sbin are its own), so what shadow-utils
// and the installer write there lands on the machine.
var logDir = "/var/log"

// loginRecords are the files below logDir that account tools write per
// uid or per login: useradd without --no-log-init writes a lastlog and a
// faillog entry at the account's uid (the sparse file grows to
// (uid+1)·record size: 30 KB -> 292 KB on Debian 11), login and su write
// wtmp, btmp and tallylog. userdel never shrinks them. Their sizes are
// compared exactly: a grown file is an entry written.
var loginRecords = []string{"lastlog", "faillog", "btmp", "wtmp", "tallylog"}

// logSkipped are the subdirectories of logDir whose entries are not
// compared: journal/ holds systemd-journald's files, which the machine's
// own journald (or a booted host's, when it is not masked) creates and
// rotates whatever a test does; private/ is systemd's directory for the
// logs of services with DynamicUser=. Every other entry's presence is
// compared (not its size: the machine's dockerd, dpkg and apt logs grow
// with other work on the machine), so that a file a test writes there
// shows as new.
var logSkipped = []string{"journal", "private"}

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
	if err := snapshotLogs(s); err != nil {
		return nil, err
	}
	if err := snapshotCgroups(s); err != nil {
		return nil, err
	}
	return s, nil
}

// snapshotCgroups adds the machine's cgroup2 hierarchy: each directory
// below this process's cgroup in it, which is where a test host's
// sub-cgroup and everything its systemd makes are. The machine's v1
// hierarchies are not compared here: other processes on the machine
// (other test runs among them) make and remove directories at their
// roots, which this process shares; that a host's systemd never made one
// is checked on the host itself (Teardown: no v1 hierarchy was mounted
// inside). Left out: docker/ (the engine's
// containers, also other test runs'), and the sub-cgroup of a test host
// that still runs (oac-testhost-*, named after the host's directory in
// the temporary directory, which its Teardown removes after the cgroup).
func snapshotCgroups(s Snapshot) error {
	own, err := ownCgroups()
	if err != nil {
		return err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		// id parent dev root mountpoint opts [optional…] - fstype source superopts
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 3 || g[0] != "cgroup2" {
			continue
		}
		path, ok := own[""]
		if !ok {
			continue
		}
		top := filepath.Join(unescapeMount(f[4]), path)
		err := filepath.WalkDir(top, func(p string, e fs.DirEntry, err error) error {
			if err != nil || !e.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(top, p)
			if rel == "docker" {
				return filepath.SkipDir
			}
			if strings.HasPrefix(rel, "oac-testhost-") && !strings.Contains(rel, "/") {
				if _, err := os.Stat(filepath.Join(os.TempDir(), rel)); err == nil {
					return filepath.SkipDir
				}
			}
			s["cgroup "+p] = "directory"
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// snapshotLogs adds logDir: each login record's size (or "absent"), and
// every other entry's presence, journal/ and private/ aside.
func snapshotLogs(s Snapshot) error {
	for _, name := range loginRecords {
		p := filepath.Join(logDir, name)
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			s[p] = "absent"
		case err != nil:
			return err
		default:
			s[p] = fmt.Sprintf("%s size %d", fi.Mode().Type(), fi.Size())
		}
	}
	err := filepath.WalkDir(logDir, func(p string, e fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(logDir, p)
		if rel == "." {
			return nil
		}
		for _, skip := range logSkipped {
			if rel == skip || strings.HasPrefix(rel, skip+"/") {
				if e.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		if _, ok := s[p]; !ok {
			s[p] = "present"
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Diff lists what differs from before to after, sorted (treetest.Diff's
// lines).
func (before Snapshot) Diff(after Snapshot) []string {
	return treetest.DiffLines(treetest.Tree(before), treetest.Tree(after))
}
