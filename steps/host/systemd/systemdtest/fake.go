package systemdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/openagentcore/oac-node-install/steps/host/systemd"
)

// ErrClosed is returned by every call after Close.
var ErrClosed = errors.New("fake systemd: connection closed")

// Fake is an in-memory systemd.Manager. The zero value is not usable: call
// New.
type Fake struct {
	mu sync.Mutex
	// UnitDir, when set, is read by Reload: each regular file in it becomes
	// a loaded unit, and a unit whose file is gone becomes not-found. A
	// unit loaded from a file that has changed since (or which is gone)
	// shows NeedDaemonReload, as systemd's does (systemd compares the
	// file's modification time; the fake, the text). The
	// fake loads a new file only on Reload (as systemd does for a name it
	// has cached as not-found).
	UnitDir string
	units   map[string]*unit
	calls   []string
	fail    map[string]error
	closed  bool
	// OnStart, when set, decides the state a started unit enters instead
	// of active/running (a unit that fails, or keeps restarting).
	OnStart func(unit string) systemd.UnitState
	props   map[string]systemd.UnitProperties // SetProperties (properties.go)
	// version is the manager's Version property (SetVersion).
	version string
	// outdated is systemd's unit_file_state_outdated: an enable or
	// disable changed links since the last Reload. From systemd 257 on,
	// every unit then reports NeedDaemonReload.
	outdated bool
}

type unit struct {
	file    bool   // a unit file is loaded
	loaded  []byte // the loaded file's text (Reload); nil when added
	enabled bool
	state   systemd.UnitState
}

// New returns a fake that reads unit files from dir on Reload ("" for
// none: Add units then).
func New(dir string) *Fake {
	return &Fake{UnitDir: dir, units: map[string]*unit{}, fail: map[string]error{}, version: DefaultVersion}
}

// DefaultVersion is the manager version a new Fake reports: one that
// reports every unit as needing a daemon-reload after links changed.
const DefaultVersion = "257.9-1"

// SetVersion sets the manager's Version property. A version below 257
// (or one that does not parse) no longer reports NeedDaemonReload after
// an enable or disable.
func (f *Fake) SetVersion(v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.version = v
}

// Version is the manager's Version property. Reading it changes nothing
// and is not among Calls; Fail("version", "", err) makes it fail.
func (f *Fake) Version(context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return "", ErrClosed
	}
	if err, ok := f.fail["version"]; ok {
		delete(f.fail, "version")
		return "", err
	}
	return f.version, nil
}

// outdatedReload reports whether links changed since the last Reload on
// a manager that reports that as NeedDaemonReload (systemd 257 and later).
func (f *Fake) outdatedReload() bool {
	n, err := systemd.ParseVersion(f.version)
	return f.outdated && err == nil && n >= 257
}

var _ systemd.Manager = (*Fake)(nil)

// Add makes a unit loaded, as if its file had been read.
func (f *Fake) Add(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.get(name).file = true
}

// Fail makes the next call of verb ("reload", "enable", "disable",
// "start", "stop", "reset-failed", "state") on unit fail with err; unit is
// "" for reload.
func (f *Fake) Fail(verb, unit string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[strings.TrimSpace(verb+" "+unit)] = err
}

// Set overwrites a unit's state (LoadState is kept).
func (f *Fake) Set(name string, st systemd.UnitState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u := f.get(name)
	st.LoadState = u.state.LoadState
	u.state = st
	f.refresh(u)
}

// Calls returns the calls made so far, as "verb unit".
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// Enabled reports whether the unit is enabled.
func (f *Fake) Enabled(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.units[name]
	return ok && u.enabled
}

func (f *Fake) get(name string) *unit {
	u, ok := f.units[name]
	if !ok {
		u = &unit{state: systemd.UnitState{ActiveState: "inactive", SubState: "dead"}}
		f.units[name] = u
	}
	f.refresh(u)
	return u
}

func (f *Fake) refresh(u *unit) {
	if u.file {
		u.state.LoadState = "loaded"
	} else {
		u.state.LoadState = "not-found"
	}
}

// begin records the call and returns an injected failure, if any.
func (f *Fake) begin(verb, name string) error {
	key := strings.TrimSpace(verb + " " + name)
	f.calls = append(f.calls, key)
	if f.closed {
		return ErrClosed
	}
	if err, ok := f.fail[key]; ok {
		delete(f.fail, key)
		return err
	}
	return nil
}

// known reports whether systemd would know the unit: loaded from a file,
// or still active without one.
func (f *Fake) known(name string) bool {
	u, ok := f.units[name]
	return ok && (u.file || u.state.ActiveState != "inactive")
}

func (f *Fake) Reload(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("reload", ""); err != nil {
		return err
	}
	f.outdated = false
	if f.UnitDir == "" {
		return nil
	}
	entries, err := os.ReadDir(f.UnitDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("fake systemd: read %s: %w", f.UnitDir, err)
	}
	present := map[string]bool{}
	for _, e := range entries {
		if e.Type().IsRegular() {
			present[e.Name()] = true
		}
	}
	for name := range present {
		u := f.get(name)
		u.file = true
		if text, err := os.ReadFile(filepath.Join(f.UnitDir, name)); err == nil {
			u.loaded = append([]byte{}, text...)
		}
	}
	for name, u := range f.units {
		if !present[name] {
			u.file = false
			f.refresh(u)
		}
	}
	return nil
}

func (f *Fake) Enable(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("enable", name); err != nil {
		return err
	}
	if u, ok := f.units[name]; !ok || !u.file {
		return fmt.Errorf("enable %s: unit file does not exist: %w", name, systemd.ErrNoSuchUnit)
	}
	if !f.units[name].enabled {
		f.outdated = true
	}
	f.units[name].enabled = true
	return nil
}

func (f *Fake) Disable(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("disable", name); err != nil {
		return err
	}
	if u, ok := f.units[name]; ok {
		if u.enabled {
			f.outdated = true
		}
		u.enabled = false
	}
	return nil
}

func (f *Fake) Start(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("start", name); err != nil {
		return err
	}
	if u, ok := f.units[name]; !ok || !u.file {
		return fmt.Errorf("start %s: unit not found: %w", name, systemd.ErrNoSuchUnit)
	}
	u := f.units[name]
	st := systemd.UnitState{ActiveState: "active", SubState: "running"}
	if f.OnStart != nil {
		st = f.OnStart(name)
	}
	st.LoadState = u.state.LoadState
	u.state = st
	if st.ActiveState == "failed" {
		return fmt.Errorf("start %s: job failed: %w", name, systemd.ErrJobFailed)
	}
	return nil
}

func (f *Fake) Stop(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("stop", name); err != nil {
		return err
	}
	if !f.known(name) {
		return fmt.Errorf("stop %s: unit not loaded: %w", name, systemd.ErrNoSuchUnit)
	}
	u := f.units[name]
	if u.state.ActiveState != "failed" {
		u.state.ActiveState, u.state.SubState = "inactive", "dead"
	}
	return nil
}

func (f *Fake) ResetFailed(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("reset-failed", name); err != nil {
		return err
	}
	if !f.known(name) {
		return fmt.Errorf("reset-failed %s: unit not loaded: %w", name, systemd.ErrNoSuchUnit)
	}
	u := f.units[name]
	if u.state.ActiveState == "failed" {
		u.state.ActiveState, u.state.SubState = "inactive", "dead"
	}
	u.state.NRestarts = 0
	return nil
}

func (f *Fake) State(_ context.Context, name string) (systemd.UnitState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.begin("state", name); err != nil {
		return systemd.UnitState{}, err
	}
	u := f.get(name)
	st := u.state
	if u.file && u.loaded != nil {
		text, err := os.ReadFile(filepath.Join(f.UnitDir, name))
		st.NeedDaemonReload = err != nil || !bytes.Equal(text, u.loaded)
	}
	if f.outdatedReload() {
		st.NeedDaemonReload = true
	}
	if u.file {
		st.UnitFileState = "disabled"
		if u.enabled {
			st.UnitFileState = "enabled"
		}
	}
	return st, nil
}

func (f *Fake) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
