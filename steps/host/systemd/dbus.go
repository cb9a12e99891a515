package systemd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

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
	// cancel ends the connection's context (Close).
	cancel context.CancelFunc
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

// Deadlines of the calls to systemd: a manager that accepts the connection
// and never answers fails the command with what it waited for, instead of
// holding it for as long as the operator waits. DialTimeout bounds each way
// of connecting, CallTimeout each method call, JobTimeout the wait for a
// start or stop job's result (systemd's own start timeout is 90 s).
var (
	DialTimeout = 30 * time.Second
	CallTimeout = 2 * time.Minute
	JobTimeout  = 5 * time.Minute
)

// ErrNoAnswer means systemd did not answer a call within its deadline.
var ErrNoAnswer = errors.New("systemd did not answer in time")

// within is ctx bounded by timeout, for one call on an open connection.
func within(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, timeout)
}

// late wraps err, from a call made with cctx derived from ctx, as
// ErrNoAnswer when cctx's own deadline ended it.
func late(ctx, cctx context.Context, timeout time.Duration, err error) error {
	if ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w (waited %s): %v", ErrNoAnswer, timeout, err)
	}
	return err
}

// Dial connects to systemd over the system bus, and, when that fails, over
// its private socket /run/systemd/private, which only root may use and which
// answers even when no bus daemon runs. Both failing is ErrUnavailable.
func Dial(ctx context.Context) (*DBus, error) {
	d, errBus := dialWithin(ctx, "system bus", sd.NewSystemConnectionContext)
	if errBus == nil {
		return d, nil
	}
	d, errPrivate := dialWithin(ctx, "/run/systemd/private", dialPrivateConn)
	if errPrivate == nil {
		return d, nil
	}
	return nil, fmt.Errorf("connect to systemd (system bus: %v; /run/systemd/private: %v): %w", errBus, errPrivate, ErrUnavailable)
}

// dialPrivateConn connects over /run/systemd/private; a test replaces it.
var dialPrivateConn = sd.NewSystemdConnectionContext

// DialPrivateFirst is Dial for a command that must answer within seconds
// (status): as root it connects over /run/systemd/private first, as
// systemctl does, so that a bus daemon that accepts and never answers
// does not use up its time; then over the system bus. Not root, it is
// Dial (only root may use the private socket).
func DialPrivateFirst(ctx context.Context) (*DBus, error) {
	if os.Geteuid() != 0 {
		return Dial(ctx)
	}
	d, errPrivate := dialWithin(ctx, "/run/systemd/private", dialPrivateConn)
	if errPrivate == nil {
		return d, nil
	}
	d, errBus := dialWithin(ctx, "system bus", sd.NewSystemConnectionContext)
	if errBus == nil {
		return d, nil
	}
	return nil, fmt.Errorf("connect to systemd (/run/systemd/private: %v; system bus: %v): %w", errPrivate, errBus, ErrUnavailable)
}

// DialPrivate connects over /run/systemd/private only.
func DialPrivate(ctx context.Context) (*DBus, error) {
	d, err := dialWithin(ctx, "/run/systemd/private", dialPrivateConn)
	if err != nil {
		return nil, fmt.Errorf("connect to systemd over /run/systemd/private: %v: %w", err, ErrUnavailable)
	}
	return d, nil
}

// DialSystemBus connects over the system bus only.
func DialSystemBus(ctx context.Context) (*DBus, error) {
	d, err := dialWithin(ctx, "system bus", sd.NewSystemConnectionContext)
	if err != nil {
		return nil, fmt.Errorf("connect to systemd over the system bus: %v: %w", err, ErrUnavailable)
	}
	return d, nil
}

// dialWithin connects with dial, giving up after DialTimeout. The context a
// go-systemd connection is made with stays its context (the connection
// closes when it ends), so it is cancelled only when the dial gives up, or
// by Close.
func dialWithin(ctx context.Context, via string, dial func(context.Context) (*sd.Conn, error)) (*DBus, error) {
	cctx, cancel := context.WithCancel(ctx)
	type result struct {
		conn *sd.Conn
		err  error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := dial(cctx)
		done <- result{conn, err}
	}()
	timer := time.NewTimer(DialTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.err != nil {
			cancel()
			return nil, r.err
		}
		return &DBus{conn: r.conn, Via: via, cancel: cancel}, nil
	case <-timer.C:
		cancel()
		return nil, fmt.Errorf("%w (waited %s)", ErrNoAnswer, DialTimeout)
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
}

var _ Manager = (*DBus)(nil)

// Close closes both of the connection's sockets.
func (d *DBus) Close() error {
	d.conn.Close()
	if d.cancel != nil {
		d.cancel()
	}
	return nil
}

// Reload is daemon-reload.
func (d *DBus) Reload(ctx context.Context) error {
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	if err := d.conn.ReloadContext(cctx); err != nil {
		return fmt.Errorf("systemd daemon-reload: %w", late(ctx, cctx, CallTimeout, translate(err)))
	}
	return nil
}

// Enable enables the unit persistently (not under /run), without replacing
// links that point elsewhere (no --force), and makes the links durable
// (see SyncLinks): systemd fsyncs none of them.
func (d *DBus) Enable(ctx context.Context, unit string) error {
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	_, changes, err := d.unitFiles().EnableUnitFilesContext(cctx, []string{unit}, false, false)
	if err != nil {
		return fmt.Errorf("enable %s: %w", unit, late(ctx, cctx, CallTimeout, translate(err)))
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
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	changes, err := d.unitFiles().DisableUnitFilesContext(cctx, []string{unit}, false)
	if err != nil {
		return fmt.Errorf("disable %s: %w", unit, late(ctx, cctx, CallTimeout, translate(err)))
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
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	if _, err := call(cctx, unit, "replace", done); err != nil {
		return fmt.Errorf("%s %s: %w", verb, unit, late(ctx, cctx, CallTimeout, translate(err)))
	}
	jctx, cancel := within(ctx, JobTimeout)
	defer cancel()
	select {
	case result := <-done:
		if result != "done" {
			return fmt.Errorf("%s %s: job %s: %w", verb, unit, result, ErrJobFailed)
		}
		return nil
	case <-jctx.Done():
		return fmt.Errorf("%s %s: waiting for the job: %w", verb, unit, late(ctx, jctx, JobTimeout, jctx.Err()))
	}
}

// ResetFailed is reset-failed.
func (d *DBus) ResetFailed(ctx context.Context, unit string) error {
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	if err := d.conn.ResetFailedUnitContext(cctx, unit); err != nil {
		return fmt.Errorf("reset-failed %s: %w", unit, late(ctx, cctx, CallTimeout, translate(err)))
	}
	return nil
}

// State reads LoadState, ActiveState, SubState, UnitFileState and
// NeedDaemonReload of the unit and, for a
// .service, NRestarts and ExecMainStatus.
func (d *DBus) State(ctx context.Context, unit string) (UnitState, error) {
	var st UnitState
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	props, err := d.conn.GetUnitPropertiesContext(cctx, unit)
	if err != nil {
		return st, fmt.Errorf("properties of %s: %w", unit, late(ctx, cctx, CallTimeout, translate(err)))
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
		p, err := d.conn.GetServicePropertyContext(cctx, unit, name)
		if err != nil {
			return st, fmt.Errorf("property %s of %s: %w", name, unit, late(ctx, cctx, CallTimeout, translate(err)))
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
