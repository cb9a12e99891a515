package noderoot

import (
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
)

// Unlock releases the locks Acquire took (Close does too).
func (e *Env) Unlock() {
	if e.lease != nil {
		e.lease.Close()
		e.lease = nil
	}
	if e.installLock != nil {
		e.installLock.Unlock()
		e.installLock = nil
	}
}

// Locked implements Data.
func (e *Env) Locked() (bool, bool) { return e.installLock != nil, e.lease != nil }

// LeaseExists implements Data.
func (e *Env) LeaseExists() (bool, error) {
	return e.Present(RecordName(e.opts.Identity.Generation, ".lease"))
}

// Acquire takes, without waiting, the node's install.lock and, when it
// exists, the generation's lease exclusively (validated under the lock),
// and refuses what the action may not touch: a missing lease for repair and
// collection, a dropped or collecting generation for preparation and
// repair. A refusal changed nothing. Run calls it before the engine runs.
func (e *Env) Acquire() error {
	id := e.opts.Identity
	l, err := e.root.TryLock(layout.InstallLockFile, safefile.LockOptions{
		Create: safefile.CreateIfMissing, Perm: 0o600, Expect: safefile.Expect{UID: e.opts.UID, Mode: 0o600}})
	if err != nil {
		if errors.Is(err, safefile.ErrLocked) {
			return Refusal("The node program retries later", fmt.Errorf("%w (%s)", ErrInstallLocked, e.node.InstallLock()))
		}
		return Refusal("", fmt.Errorf("lock %s: %w", e.node.InstallLock(), err))
	}
	e.installLock = l
	ok, err := e.LeaseExists()
	if err == nil && ok {
		err = e.openLease()
	} else if err == nil && e.opts.Action != ActionPrepare {
		err = Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("%w: generation %d has no lease", lease.ErrLeaseMissing, id.Generation))
	}
	if err == nil {
		err = e.checkRecords()
	}
	if err != nil {
		e.Unlock()
		return err
	}
	return nil
}

func (e *Env) openLease() error {
	id := e.opts.Identity
	l, err := lease.Open(e.node.Generations(), id, e.opts.UID)
	if err != nil {
		return Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("lease of generation %d: %w", id.Generation, err))
	}
	if err := l.TryExclusive(); err != nil {
		l.Close()
		if errors.Is(err, lease.ErrHelperActive) {
			return Refusal("A native helper or another collector holds it; the node program retries later", err)
		}
		return Refusal("Inspect it with `oac-node-install leases`", err)
	}
	e.lease = l
	return nil
}

// checkRecords refuses a dropped or collecting generation for preparation
// and repair.
func (e *Env) checkRecords() error {
	if e.opts.Action == ActionCollect {
		return nil
	}
	g := e.opts.Identity.Generation
	if ok, err := e.Present(RecordName(g, ".dropped")); err != nil {
		return err
	} else if ok {
		return Refusal("A dropped generation can never be prepared or used again", fmt.Errorf("%w: generation %d", lease.ErrDropped, g))
	}
	if ok, err := e.Present(RecordName(g, ".collecting")); err != nil {
		return err
	} else if ok {
		return Refusal("Collection must finish first", fmt.Errorf("%w: generation %d", ErrCollecting, g))
	}
	return nil
}

// InitializeLease implements Data.
func (e *Env) InitializeLease() error {
	l, err := lease.Initialize(e.node.Generations(), e.opts.Identity, e.opts.UID)
	if err != nil {
		return err
	}
	if err := l.TryExclusive(); err != nil {
		l.Close()
		return err
	}
	e.lease = l
	return nil
}

// heldLocks are the lock files this run holds that the processes its steps
// start must inherit.
func (e *Env) heldLocks() []*os.File {
	switch {
	case e.installLock != nil:
		return []*os.File{e.installLock.File()}
	case e.sharedLock != nil:
		return []*os.File{e.sharedLock.File()}
	}
	return nil
}

// InstallLockHint is what an installation refused for a busy install.lock
// tells the operator.
const InstallLockHint = "The node program's generation helper (or another installation of this node) is working on the node; wait until it ends, then run this command again"

// TryInstallLock takes, without waiting, the node's install.lock for an
// installation's service-account steps (CONTRACT §3, §11), which keep it
// across several Envs (ShareInstallLock) and release it themselves. It is
// the only lock an installation takes in the node root, so the order is
// the helper's (install.lock first, then a generation's lease): an
// installation and a helper exclude each other without waiting and
// without deadlock. With create false a missing install.lock is not
// created: (nil, nil), no helper has ever locked it. A busy lock is a
// refusal matching ErrInstallLocked ("Another node installation is
// running").
func (e *Env) TryInstallLock(create bool) (*safefile.FileLock, error) {
	c := safefile.CreateIfMissing
	if !create {
		c = safefile.MustExist
	}
	l, err := e.root.TryLock(layout.InstallLockFile, safefile.LockOptions{
		Create: c, Perm: 0o600, Expect: safefile.Expect{UID: e.opts.UID, Mode: 0o600}})
	switch {
	case err == nil:
		return l, nil
	case !create && errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.Is(err, safefile.ErrLocked):
		return nil, Refusal(InstallLockHint, fmt.Errorf("%w (%s)", ErrInstallLocked, e.node.InstallLock()))
	}
	return nil, Refusal("", fmt.Errorf("lock %s: %w", e.node.InstallLock(), err))
}

// ShareInstallLock lets the processes e's steps start inherit l, an
// install.lock its caller holds and releases (TryInstallLock); e does not
// release it.
func (e *Env) ShareInstallLock(l *safefile.FileLock) { e.sharedLock = l }
