package install

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// hostLockStep checks that the command holds /run/oac-node.lock and
// re-checks the host records under it: another installation's record on
// the host refuses a node this host does not record (one Core per host).
// The command decided the same under the same lock before the engine ran;
// this is the journal's own check of it.
type hostLockStep struct{ d Data }

func (s hostLockStep) Run(context.Context, workflow.Facts) (workflow.Result, error) {
	if !s.d.HostLocked() {
		return workflow.Result{}, errors.New("the host lock /run/oac-node.lock is not held")
	}
	id := s.d.Options().InstallationID
	known, err := knownNode(s.d.Host(), id)
	if err != nil {
		return workflow.Result{}, err
	}
	if c := (&Preflight{Host: s.d.Host(), InstallationID: id, NewNode: !known}).records(); c.Failed() {
		return workflow.Result{}, &Refusal{Check: c}
	}
	return workflow.Result{}, nil
}

// Check: a check needs no lock (it changes nothing).
func (s hostLockStep) Check(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return done, workflow.Result{}, nil
}

// HostLockWait bounds the wait for another installation or uninstallation
// on this host (CONTRACT §3.4).
var HostLockWait = 600 * time.Second

// HostLock takes /run/oac-node.lock, waiting at most HostLockWait and
// saying once through phase (when set) that it waits for another
// installation or uninstallation. Having waited in vain, it refuses
// (workflow.Refusal).
func HostLock(ctx context.Context, h layout.Host, phase func(string)) (*safefile.FileLock, error) {
	if err := os.MkdirAll(filepath.Dir(h.HostLock()), 0o755); err != nil {
		return nil, err
	}
	l, err := safefile.TryLock(h.HostLock(), 0o600)
	if errors.Is(err, safefile.ErrUnsafe) {
		return nil, notALockFile(h.HostLock(), err)
	}
	if err == nil || !errors.Is(err, safefile.ErrLocked) {
		return l, err
	}
	if phase != nil {
		phase("Wait for another node installation or uninstallation on this host")
	}
	wctx, cancel := context.WithTimeout(ctx, HostLockWait)
	defer cancel()
	l, err = safefile.LockContext(wctx, h.HostLock(), 0o600)
	if errors.Is(err, safefile.ErrUnsafe) {
		return nil, notALockFile(h.HostLock(), err)
	}
	if err != nil {
		return nil, workflow.Refusef("another node installation on this host holds %s: %w", h.HostLock(), err)
	}
	return l, nil
}

// notALockFile is the refusal of a lock path that is not a regular file
// (safefile.ErrUnsafe: a directory, a FIFO, a device, a symbolic link):
// the installer never makes one, and flock on it would guard nothing, so
// the command stops before any change and names how to remove it.
func notALockFile(path string, err error) error {
	what := "not a regular file"
	if fi, lerr := os.Lstat(path); lerr == nil {
		switch m := fi.Mode(); {
		case m&os.ModeSymlink != 0:
			what = "a symbolic link"
		case m.IsDir():
			what = "a directory"
		case m&os.ModeNamedPipe != 0:
			what = "a FIFO"
		case m&os.ModeSocket != 0:
			what = "a socket"
		case m&os.ModeDevice != 0:
			what = "a device"
		}
	}
	return workflow.Refusef("the lock path %s is %s, not the lock file the installer makes there (%v). Check that no program uses it, remove it (sudo rm -r %s), then run the command again", path, what, err, path)
}
