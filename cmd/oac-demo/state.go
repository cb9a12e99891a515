package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// The state directory's entries; the test host's directory is
// testhost.DetachedPrefix* beside them.
const (
	stateFile   = "state.json"
	lockFile    = "lock"
	devcoreData = "devcore"
	devcoreLog  = "devcore.log"
	homeDir     = "home" // the operator's HOME inside the test host
)

// Phases of an up.
const (
	phaseStarting = "starting" // up is running or stopped part-way
	phaseUp       = "up"       // the node was installed
)

// state is what up started, recorded before each thing is started so that
// down finds everything an interrupted up left.
type state struct {
	Phase string `json:"phase"`
	// Snapshot is the machine's watched paths before up.
	Snapshot testhost.Snapshot `json:"snapshot"`
	Devcore  *devcoreState     `json:"devcore,omitempty"`
	Image    *imageState       `json:"image,omitempty"`
	// Installing is set before the bootstrap command runs in the test
	// host: from then on down uninstalls there.
	Installing bool `json:"installing,omitempty"`
}

// devcoreState is the running console.
type devcoreState struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"` // testhost.ProcessStart
	Data  string `json:"data"`
	// Known once it serves.
	URL            string `json:"url,omitempty"`
	CA             string `json:"ca,omitempty"`
	InstallationID string `json:"installation_id,omitempty"`
}

// imageState is the fixture Runtime image the installation imports into
// the machine's engine, and whether the engine had it before up (then down
// keeps it).
type imageState struct {
	IDs     []string `json:"ids"` // config and manifest digests: the image ID in either image store
	Existed bool     `json:"existed"`
}

func (d *demo) statePath(name string) string { return filepath.Join(d.state, name) }

// loadState reads the record; nil when there is none.
func (d *demo) loadState() (*state, error) {
	b, err := os.ReadFile(d.statePath(stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st state
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", d.statePath(stateFile), err)
	}
	return &st, nil
}

func (d *demo) saveState(st *state) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return safefile.AtomicWrite(d.statePath(stateFile), append(b, '\n'), 0o600)
}

// lock takes the state directory's lock, held while up or down runs; nil
// and a message when another oac-demo holds it.
func (d *demo) lock() (*safefile.FileLock, error) {
	l, err := safefile.TryLock(d.statePath(lockFile), 0o600)
	if errors.Is(err, safefile.ErrLocked) {
		return nil, fmt.Errorf("another oac-demo up or down is running on %s; wait for it or interrupt it (Ctrl-C), then rerun", d.state)
	}
	return l, err
}
