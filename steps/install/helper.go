package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/launcher"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// MaxHelperSize bounds the retained generation helper in the node root
// (layout.HelperFile), the installer binary itself, written by the service
// account (CONTRACT §9); the console allows the installer up to 64 MiB.
const MaxHelperSize = 64 << 20

// helperStep writes the retained generation helper from the bytes root
// captured when it started (never from a file the service account can
// change), then its launcher generation-preparer.pyz (package launcher),
// through which the platform's node program runs it with python3. Before
// registration a different helper or launcher is replaced; a registered
// node keeps the ones it was installed with. The helper is written first:
// the launcher's presence is what puts the node program in
// multi-generation mode, and it runs the helper beside it.
type helperStep struct{ e *NodeEnv }

// refuseRetained is the refusal of a registered node's retained file
// (helper or launcher) that differs from this installer's.
func refuseRetained(name string, err error) error {
	return noderoot.Refusal("A registered node keeps the installer it was installed with: run the same installer version, or remove the node in Web, run --uninstall, then add it again", fmt.Errorf("the retained %s differs from this installer: %w", name, err))
}

func (s helperStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	e := s.e
	if e.in.Helper == nil {
		return workflow.Result{}, errors.New("no installer bytes to retain as the generation helper")
	}
	// The bytes are written as they are mapped: a copy of tens of
	// megabytes first would cost the step most of its time.
	data, err := e.in.Helper()
	if err != nil {
		return workflow.Result{}, fmt.Errorf("read the installer's bytes: %w", err)
	}
	if len(data) > MaxHelperSize {
		return workflow.Result{}, fmt.Errorf("the installer is larger than %d bytes", MaxHelperSize)
	}
	registered, err := e.Registered()
	if err != nil {
		return workflow.Result{}, err
	}
	if err := retain(e, registered, layout.HelperFile, data, 0o700, MaxHelperSize); err != nil {
		return workflow.Result{}, err
	}
	// A node the platform's installer made holds the platform's installer
	// as its launcher: taken over, it runs this installer's helper.
	return workflow.Result{}, retain(e, registered && !e.in.PlatformNode, layout.HelperLauncherFile, launcher.Bytes(), 0o600, launcher.MaxSize)
}

// retain writes one retained file: before registration a different one is
// replaced, a registered node's different one refuses.
func retain(e *NodeEnv, registered bool, name string, data []byte, mode os.FileMode, max int64) error {
	if !registered {
		old, err := e.Root().ReadFile(name, safefile.Expect{UID: e.UID(), Mode: mode, MaxSize: max})
		if err == nil && bytes.Equal(old, data) {
			return e.Root().PublishOnce(name, data, mode)
		}
		return e.Root().AtomicWrite(name, data, mode)
	}
	if err := e.Root().PublishOnce(name, data, mode); err != nil {
		if errors.Is(err, safefile.ErrConflict) {
			return refuseRetained(name, err)
		}
		return err
	}
	return nil
}

// Check: the retained helper holds this installer's bytes and the launcher
// the launcher's; a registered node's different one refuses. The helper
// and the installer are compared as they are read, a block at a time: the
// helper is as large as the installer (tens of megabytes), and reading
// both whole cost a check most of its time.
func (s helperStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	if e.in.Helper == nil {
		return 0, workflow.Result{}, errors.New("no installer bytes to retain as the generation helper")
	}
	data, err := e.in.Helper()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if len(data) > MaxHelperSize {
		return 0, workflow.Result{}, fmt.Errorf("the installer is larger than %d bytes", MaxHelperSize)
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	f, err := e.Root().OpenFile(layout.HelperFile, safefile.Expect{UID: e.UID(), Mode: 0o700, MaxSize: MaxHelperSize})
	same := false
	if err == nil {
		same, err = sameBytes(data, io.LimitReader(f, MaxHelperSize+1))
		f.Close()
	}
	helper, err := retainedOutcome(registered, layout.HelperFile, same, err)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	// The platform's launcher is its installer, larger than ours: read
	// with ours's bound, it is a difference, replaced (Run).
	old, err := e.Root().ReadFile(layout.HelperLauncherFile, safefile.Expect{UID: e.UID(), Mode: 0o600, MaxSize: launcher.MaxSize})
	pyz, err := retainedOutcome(registered && !e.in.PlatformNode, layout.HelperLauncherFile, err == nil && bytes.Equal(old, launcher.Bytes()), err)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if helper == done && pyz == done {
		return done, workflow.Result{}, nil
	}
	return notDone, workflow.Result{}, nil
}

// retainedOutcome is one retained file's check from what reading it gave:
// done when it holds the bytes (same), not done when it is missing or, not
// yet registered, differs; a registered node's different or unsafe file
// refuses.
func retainedOutcome(registered bool, name string, same bool, err error) (workflow.Outcome, error) {
	switch {
	case errors.Is(err, os.ErrNotExist):
		return notDone, nil
	case err == nil && same:
		return done, nil
	case registered && (err == nil || errors.Is(err, safefile.ErrUnsafe)):
		return 0, refuseRetained(name, safefile.ErrConflict)
	case registered:
		return 0, err
	}
	return notDone, nil
}

// compareBlock is how much of the file sameBytes reads at a time.
const compareBlock = 1 << 20

// sameBytes reports whether file yields exactly the installer's bytes,
// reading it a block at a time and comparing each block in place with the
// installer's mapped bytes (no copy of them).
func sameBytes(installer []byte, file io.Reader) (bool, error) {
	buf := make([]byte, compareBlock)
	off := 0
	for {
		n, err := io.ReadFull(file, buf)
		if n > len(installer)-off || !bytes.Equal(buf[:n], installer[off:off+n]) {
			return false, nil
		}
		off += n
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return off == len(installer), nil
		default:
			return false, fmt.Errorf("read the retained %s: %w", layout.HelperFile, err)
		}
	}
}
