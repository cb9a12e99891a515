package accounts

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Files returns the account database files shadow-utils changes: passwd
// and group, and shadow and gshadow beside them.
func (d Databases) Files() []string {
	return []string{d.Passwd, d.Group,
		filepath.Join(filepath.Dir(d.Passwd), "shadow"), filepath.Join(filepath.Dir(d.Group), "gshadow")}
}

// Sync makes the account databases durable: each of Files that exists is
// fsynced, then the directories holding them (/etc). shadow-utils renames
// its new databases into place without an fsync of either, so without this
// a power cut after useradd, usermod, gpasswd or userdel can take the change
// back. A caller that finds a change already made (by an earlier run that
// may have been cut off before syncing) calls Sync before relying on it.
func (d Databases) Sync() error {
	var dirs []string
	for _, p := range d.Files() {
		if p == "" {
			continue
		}
		if err := syncFile(p); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		if dir := filepath.Dir(p); !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, dir := range dirs {
		if err := safefile.SyncDir(dir); err != nil {
			return fmt.Errorf("sync the account databases: %w", err)
		}
	}
	return nil
}

// syncFile fsyncs the file p (root's /etc, never the service account's).
func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := safefile.Sync(f); err != nil {
		return fmt.Errorf("sync the account database %s: %w", p, err)
	}
	return nil
}
