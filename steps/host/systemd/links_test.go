package systemd

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	sd "github.com/coreos/go-systemd/v22/dbus"
)

const linkedUnit = "oac-node-0f6e8c2a-3b1d-4e5f-9a7b-1c2d3e4f5a6b.service"

// fakeUnitFiles links and unlinks the way systemd's EnableUnitFiles and
// DisableUnitFiles do for a unit wanted by multi-user.target: the link in
// <dir>/multi-user.target.wants (created when missing), reported only when
// it was changed. With sub set, the link is in <dir>/<sub> instead.
type fakeUnitFiles struct{ dir, sub string }

func (f fakeUnitFiles) link(unit string) string {
	sub := f.sub
	if sub == "" {
		sub = "multi-user.target.wants"
	}
	return filepath.Join(f.dir, sub, unit)
}

func (f fakeUnitFiles) EnableUnitFilesContext(_ context.Context, files []string, _, _ bool) (bool, []sd.EnableUnitFileChange, error) {
	var changes []sd.EnableUnitFileChange
	for _, unit := range files {
		target := filepath.Join(f.dir, unit)
		if _, err := os.Stat(target); err != nil {
			return false, nil, err
		}
		if err := os.MkdirAll(filepath.Dir(f.link(unit)), 0o755); err != nil {
			return false, nil, err
		}
		err := os.Symlink(target, f.link(unit))
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return false, nil, err
		}
		changes = append(changes, sd.EnableUnitFileChange{Type: "symlink", Filename: f.link(unit), Destination: target})
	}
	return false, changes, nil
}

func (f fakeUnitFiles) DisableUnitFilesContext(_ context.Context, files []string, _ bool) ([]sd.DisableUnitFileChange, error) {
	var changes []sd.DisableUnitFileChange
	for _, unit := range files {
		err := os.Remove(f.link(unit))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		changes = append(changes, sd.DisableUnitFileChange{Type: "unlink", Filename: f.link(unit)})
	}
	return changes, nil
}
