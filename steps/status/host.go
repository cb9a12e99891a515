package status

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Root's facts about the installations, each read without changing
// anything: the host records and systemd's view of the units (the
// bookkeeping is in bookkeeping.go).

// UnitReader is the part of systemd status uses.
type UnitReader interface {
	Properties(ctx context.Context, unit string) (systemd.UnitProperties, error)
	Close() error
}

func dialSystemd(ctx context.Context) (UnitReader, error) { return systemd.DialPrivateFirst(ctx) }

// systemdTimeout bounds status's connection to systemd and each query.
const systemdTimeout = 5 * time.Second

// readUnits asks systemd, connected by dial (nil: the host's), about each
// installation's unit. When systemd cannot be reached every unit says so;
// that is no failure of status.
func readUnits(ctx context.Context, dial func(context.Context) (UnitReader, error), ids []ident.InstallationID) map[ident.InstallationID]*UnitStatus {
	out := map[ident.InstallationID]*UnitStatus{}
	for _, id := range ids {
		out[id] = &UnitStatus{Name: layout.UnitName(id)}
	}
	if len(ids) == 0 {
		return out
	}
	if dial == nil {
		dial = dialSystemd
	}
	// go-systemd closes the connection when the dial's context ends: it
	// lasts for all the queries, each bounded by its own timeout.
	dctx, cancel := context.WithTimeout(ctx, systemdTimeout*time.Duration(1+len(ids)))
	defer cancel()
	sd, err := dial(dctx)
	if err != nil {
		for _, u := range out {
			u.Error = err.Error()
		}
		return out
	}
	defer sd.Close()
	for _, u := range out {
		qctx, cancel := context.WithTimeout(dctx, systemdTimeout)
		p, err := sd.Properties(qctx, u.Name)
		cancel()
		if err != nil {
			u.Error = err.Error()
			continue
		}
		u.Reachable, u.UnitProperties, u.LastExit = true, p, p.LastExit()
	}
	return out
}

// readHostRecord reads the host record of id: nil when there is none.
func readHostRecord(h layout.Host, id ident.InstallationID) (*hostrecord.Record, error) {
	rec, err := hostrecord.Read(h, id)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &rec, nil
}

// recordIDs lists the installations the host records name
// (/etc/oac-node/<id>.json, canonical ids).
func recordIDs(h layout.Host) []ident.InstallationID {
	m, _ := filepath.Glob(filepath.Join(h.EtcDir(), "*-*-*-*-*.json"))
	var ids []ident.InstallationID
	for _, p := range m {
		if id, err := ident.ParseInstallationID(strings.TrimSuffix(filepath.Base(p), ".json")); err == nil {
			ids = append(ids, id)
		}
	}
	return ids
}
