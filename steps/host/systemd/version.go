package systemd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MinVersion is the oldest systemd that loads the node's unit as written
// (README, "The oldest systemd"): Type=exec came with systemd 240 and the
// ExecStart= prefix ":" (no environment variable substitution) with 242;
// every other directive of the unit is older.
const MinVersion = 242

// ErrTooOld means the host's systemd is older than MinVersion.
var ErrTooOld = errors.New("systemd is too old")

// ParseVersion reads the major version from the manager's Version
// property as distributions report it: "252.30-1~deb12u2", "239",
// "257.9-1", "v258-rc1", "249.11-0ubuntu3.12", "239 (239-82.el8)".
func ParseVersion(v string) (int, error) {
	s := strings.TrimPrefix(strings.TrimSpace(v), "v")
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == 0 || end > 6 {
		return 0, fmt.Errorf("systemd version %q is not a version number", v)
	}
	n, err := strconv.Atoi(s[:end])
	if err != nil {
		return 0, fmt.Errorf("systemd version %q is not a version number", v)
	}
	return n, nil
}

// Versioned is a manager whose version can be read (the manager's
// Version property, org.freedesktop.systemd1.Manager).
type Versioned interface {
	Version(ctx context.Context) (string, error)
}

// CheckVersion reads the manager's version and refuses one older than
// MinVersion with an error matching ErrTooOld that names both versions. It
// returns the version read. A version that does not parse is refused too:
// nothing says the unit would load.
func CheckVersion(ctx context.Context, m Versioned) (string, error) {
	v, err := m.Version(ctx)
	if err != nil {
		return "", err
	}
	n, err := ParseVersion(v)
	if err != nil {
		return v, tooOld(fmt.Sprintf("%v; the node's unit needs systemd %d or later", err, MinVersion))
	}
	if n < MinVersion {
		named := strconv.Itoa(n)
		if raw := strings.TrimSpace(v); raw != named {
			named += " (" + raw + ")"
		}
		return v, tooOld(fmt.Sprintf("this host runs systemd %s; the node's unit needs systemd %d or later (Type=exec, the ExecStart= prefix \":\")", named, MinVersion))
	}
	return v, nil
}

// tooOld is a refusal of the host's systemd version: its text, matching
// ErrTooOld.
type tooOld string

func (e tooOld) Error() string        { return string(e) }
func (e tooOld) Is(target error) bool { return target == ErrTooOld }

// Version reads the manager's Version property. go-systemd's call takes
// no context: a manager that does not answer is left to it (Close ends
// the call) once ctx or CallTimeout ends.
func (d *DBus) Version(ctx context.Context) (string, error) {
	cctx, cancel := within(ctx, CallTimeout)
	defer cancel()
	type result struct {
		v   string
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := d.conn.GetManagerProperty("Version")
		done <- result{v, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return "", fmt.Errorf("systemd's version: %w", translate(r.err))
		}
		// The property's text form: a quoted string.
		if u, err := strconv.Unquote(r.v); err == nil {
			return u, nil
		}
		return r.v, nil
	case <-cctx.Done():
		return "", fmt.Errorf("systemd's version: %w", late(ctx, cctx, CallTimeout, cctx.Err()))
	}
}
