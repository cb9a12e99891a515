package systemd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// UnitDir is the directory of persistent unit files and of the links
// enable makes (systemctl enable without --runtime).
const UnitDir = "/etc/systemd/system"

// SyncLinks makes what enable or disable changed durable: systemd creates
// and removes the links (and a new <target>.wants directory) without any
// fsync, so a power cut could take back an enable the journal records as
// done. It fsyncs the directory of each link in changed (the files systemd
// reported it linked or unlinked) and that directory's parent, and, for
// the links an earlier run may have changed without syncing (systemd
// reports nothing for a unit already enabled or disabled), every
// *.wants and *.requires directory of unitDir and unitDir itself. The
// unit's own file in unitDir, when it is a regular file, is fsynced too:
// it is the links' target.
func SyncLinks(unitDir, unit string, changed []string) error {
	var dirs []string
	add := func(dir string) {
		if !slices.Contains(dirs, dir) {
			dirs = append(dirs, dir)
		}
	}
	for _, link := range changed {
		if !filepath.IsAbs(link) {
			continue
		}
		add(filepath.Dir(link))
		add(filepath.Dir(filepath.Dir(link)))
	}
	entries, err := os.ReadDir(unitDir)
	switch {
	case err == nil:
		add(unitDir)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("sync the unit's links: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() && (strings.HasSuffix(e.Name(), ".wants") || strings.HasSuffix(e.Name(), ".requires")) {
			add(filepath.Join(unitDir, e.Name()))
		}
	}
	if fi, err := os.Lstat(filepath.Join(unitDir, unit)); err == nil && fi.Mode().IsRegular() {
		if err := safefile.DurablePath(filepath.Join(unitDir, unit), safefile.Expect{UID: safefile.AnyUID}); err != nil {
			return fmt.Errorf("sync the unit file: %w", err)
		}
	}
	for _, dir := range dirs {
		if err := safefile.SyncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sync the unit's links: %w", err)
		}
	}
	return nil
}
