package systemd

import (
	"context"
	"errors"
	"fmt"

	sd "github.com/coreos/go-systemd/v22/dbus"
	godbus "github.com/godbus/dbus/v5"
)

// DBus is the real Manager: go-systemd's D-Bus client.
type DBus struct {
	conn *sd.Conn
	// files changes the links; nil means conn (tests set a fake).
	files unitFiles
	// unitDir is where enable makes its links; "" means UnitDir.
	unitDir string
	// Via names the transport in use: "system bus" or "/run/systemd/private".
	Via string
}

// unitFiles is the part of the connection that enables and disables unit
// files.
type unitFiles interface {
	EnableUnitFilesContext(ctx context.Context, files []string, runtime, force bool) (bool, []sd.EnableUnitFileChange, error)
	DisableUnitFilesContext(ctx context.Context, files []string, runtime bool) ([]sd.DisableUnitFileChange, error)
}

func (d *DBus) unitFiles() unitFiles {
	if d.files != nil {
		return d.files
	}
	return d.conn
}

// Dial connects to systemd over the system bus, and, when that fails, over
// its private socket /run/systemd/private, which only root may use and which
// answers even when no bus daemon runs. Both failing is ErrUnavailable.
func Dial(ctx context.Context) (*DBus, error) {
	conn, errBus := sd.NewSystemConnectionContext(ctx)
	if errBus == nil {
		return &DBus{conn: conn, Via: "system bus"}, nil
	}
	conn, errPrivate := sd.NewSystemdConnectionContext(ctx)
	if errPrivate == nil {
		return &DBus{conn: conn, Via: "/run/systemd/private"}, nil
	}
	return nil, fmt.Errorf("connect to systemd (system bus: %v; /run/systemd/private: %v): %w", errBus, errPrivate, ErrUnavailable)
}

// DialPrivate connects over /run/systemd/private only.
func DialPrivate(ctx context.Context) (*DBus, error) {
	conn, err := sd.NewSystemdConnectionContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to systemd over /run/systemd/private: %v: %w", err, ErrUnavailable)
	}
	return &DBus{conn: conn, Via: "/run/systemd/private"}, nil
}

// DialSystemBus connects over the system bus only.
func DialSystemBus(ctx context.Context) (*DBus, error) {
	conn, err := sd.NewSystemConnectionContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to systemd over the system bus: %v: %w", err, ErrUnavailable)
	}
	return &DBus{conn: conn, Via: "system bus"}, nil
}

var _ Manager = (*DBus)(nil)

// Close closes both of the connection's sockets.
func (d *DBus) Close() error {
	d.conn.Close()
	return nil
}

// Reload is daemon-reload.
func (d *DBus) Reload(ctx context.Context) error {
	if err := d.conn.ReloadContext(ctx); err != nil {
		return fmt.Errorf("systemd daemon-reload: %w", translate(err))
	}
	return nil
}

// Enable enables the unit persistently (not under /run), without replacing
// links that point elsewhere (no --force), and makes the links durable
// (see SyncLinks): systemd fsyncs none of them.
func (d *DBus) Enable(ctx context.Context, unit string) error {
	_, changes, err := d.unitFiles().EnableUnitFilesContext(ctx, []string{unit}, false, false)
	if err != nil {
		return fmt.Errorf("enable %s: %w", unit, translate(err))
	}
	var links []string
	for _, c := range changes {
		links = append(links, c.Filename)
	}
	if err := SyncLinks(d.linkDir(), unit, links); err != nil {
		return fmt.Errorf("enable %s: %w", unit, err)
	}
	return nil
}

// Disable disables the unit and makes the removal of its links durable
// (see SyncLinks).
func (d *DBus) Disable(ctx context.Context, unit string) error {
	changes, err := d.unitFiles().DisableUnitFilesContext(ctx, []string{unit}, false)
	if err != nil {
		return fmt.Errorf("disable %s: %w", unit, translate(err))
	}
	var links []string
	for _, c := range changes {
		links = append(links, c.Filename)
	}
	if err := SyncLinks(d.linkDir(), unit, links); err != nil {
		return fmt.Errorf("disable %s: %w", unit, err)
	}
	return nil
}

func (d *DBus) linkDir() string {
	if d.unitDir != "" {
		return d.unitDir
	}
	return UnitDir
}

// Start starts the unit and waits for the job's result.
func (d *DBus) Start(ctx context.Context, unit string) error {
	return d.job(ctx, "start", unit, d.conn.StartUnitContext)
}

// Stop stops the unit and waits for the job's result.
func (d *DBus) Stop(ctx context.Context, unit string) error {
	return d.job(ctx, "stop", unit, d.conn.StopUnitContext)
}

func (d *DBus) job(ctx context.Context, verb, unit string, call func(context.Context, string, string, chan<- string) (int, error)) error {
	// Buffered: go-systemd's signal dispatcher must never block on a
	// result nobody reads any more (ctx ended).
	done := make(chan string, 1)
	if _, err := call(ctx, unit, "replace", done); err != nil {
		return fmt.Errorf("%s %s: %w", verb, unit, translate(err))
	}
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%s %s: job %s: %w", verb, unit, result, ErrJobFailed)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%s %s: waiting for the job: %w", verb, unit, ctx.Err())
	}
}

// ResetFailed is reset-failed.
func (d *DBus) ResetFailed(ctx context.Context, unit string) error {
	if err := d.conn.ResetFailedUnitContext(ctx, unit); err != nil {
		return fmt.Errorf("reset-failed %s: %w", unit, translate(err))
	}
	return nil
}

// State reads LoadState, ActiveState, SubState, UnitFileState and
// NeedDaemonReload of the unit and, for a
// .service, NRestarts and ExecMainStatus.
func (d *DBus) State(ctx context.Context, unit string) (UnitState, error) {
	var st UnitState
	props, err := d.conn.GetUnitPropertiesContext(ctx, unit)
	if err != nil {
		return st, fmt.Errorf("properties of %s: %w", unit, translate(err))
	}
	st.LoadState, _ = props["LoadState"].(string)
	st.ActiveState, _ = props["ActiveState"].(string)
	st.SubState, _ = props["SubState"].(string)
	st.UnitFileState, _ = props["UnitFileState"].(string)
	st.NeedDaemonReload, _ = props["NeedDaemonReload"].(bool)
	if st.LoadState != "loaded" || !isService(unit) {
		return st, nil
	}
	for name, dst := range map[string]any{"NRestarts": &st.NRestarts, "ExecMainStatus": &st.ExecMainStatus} {
		p, err := d.conn.GetServicePropertyContext(ctx, unit, name)
		if err != nil {
			return st, fmt.Errorf("property %s of %s: %w", name, unit, translate(err))
		}
		if err := p.Value.Store(dst); err != nil {
			return st, fmt.Errorf("property %s of %s: %w", name, unit, err)
		}
	}
	return st, nil
}

func isService(unit string) bool {
	return len(unit) > len(".service") && unit[len(unit)-len(".service"):] == ".service"
}

// translate maps systemd's D-Bus error names onto this package's sentinels,
// keeping the original error's text.
func translate(err error) error {
	var name string
	var value godbus.Error
	var pointer *godbus.Error
	switch {
	case errors.As(err, &value):
		name = value.Name
	case errors.As(err, &pointer):
		name = pointer.Name
	}
	switch name {
	case "org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.systemd1.LoadFailed":
		return fmt.Errorf("%v: %w", err, ErrNoSuchUnit)
	}
	return err
}
