package systemd

import "errors"

// ErrUnrepresentable means a value cannot be written into a unit or
// environment file so that systemd reads back exactly that value (a newline,
// NUL or other control character, invalid UTF-8, a relative or unclean
// path). Nothing is written when it is returned.
var ErrUnrepresentable = errors.New("cannot be represented in a systemd file")

// ErrUnavailable means neither the system bus nor systemd's private socket
// answered: systemd is not running as the service manager of this host.
var ErrUnavailable = errors.New("systemd is not reachable over D-Bus")

// ErrNoSuchUnit means systemd has no such unit loaded (stop, reset-failed of
// a unit it does not know).
var ErrNoSuchUnit = errors.New("no such unit")

// ErrJobFailed means a start or stop job did not finish with "done"; the
// error names the job's result (failed, timeout, canceled, dependency, …).
var ErrJobFailed = errors.New("systemd job did not complete")

// ErrNotActive means the unit did not reach ActiveState=active before the
// deadline, or reached "failed"; the error names the last state seen.
var ErrNotActive = errors.New("unit is not active")
