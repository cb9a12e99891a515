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
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// MaxHelperSize bounds the retained generation helper in the node root
// (layout.HelperFile), the installer binary itself, written by the service
// account (CONTRACT §9); the console allows the installer up to 64 MiB.
const MaxHelperSize = 64 << 20

// helperStep writes the retained generation helper from the bytes root
// captured when it started (never from a file the service account can
// change). Before registration a different helper is replaced; a
// registered node keeps the helper it was installed with.
type helperStep struct{ e *NodeEnv }

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
	if !registered {
		old, err := e.Root().ReadFile(layout.HelperFile, safefile.Expect{UID: e.UID(), Mode: 0o700, MaxSize: MaxHelperSize})
		if err == nil && bytes.Equal(old, data) {
			return workflow.Result{}, e.Root().PublishOnce(layout.HelperFile, data, 0o700)
		}
		return workflow.Result{}, e.Root().AtomicWrite(layout.HelperFile, data, 0o700)
	}
	if err := e.Root().PublishOnce(layout.HelperFile, data, 0o700); err != nil {
		if errors.Is(err, safefile.ErrConflict) {
			return workflow.Result{}, noderoot.Refusal("A registered node keeps the installer it was installed with: run the same installer version, or remove the node in Web, run --uninstall, then add it again", fmt.Errorf("the retained %s differs from this installer: %w", layout.HelperFile, err))
		}
		return workflow.Result{}, err
	}
	return workflow.Result{}, nil
}

// Check: the retained helper holds this installer's bytes; a registered
// node's different helper refuses. The two are compared as they are read,
// a block at a time: the helper is as large as the installer (tens of
// megabytes), and reading both whole cost a check most of its time.
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
	switch {
	case errors.Is(err, os.ErrNotExist):
		return notDone, workflow.Result{}, nil
	case err == nil && same:
		return done, workflow.Result{}, nil
	case registered && (err == nil || errors.Is(err, safefile.ErrUnsafe)):
		return 0, workflow.Result{}, noderoot.Refusal("A registered node keeps the installer it was installed with: run the same installer version, or remove the node in Web, run --uninstall, then add it again", fmt.Errorf("the retained %s differs from this installer: %w", layout.HelperFile, safefile.ErrConflict))
	case registered:
		return 0, workflow.Result{}, err
	}
	return notDone, workflow.Result{}, nil
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
