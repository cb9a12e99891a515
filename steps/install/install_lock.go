package install

import (
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/workflow"
)

// InstallLock holds <node root>/install.lock for the installation's
// service-account steps (CONTRACT §3, §11): the platform's installer holds
// it around the downloads, the lease, the image, provider.json and the
// registration, and the generation helper holds it for the whole of a
// preparation or collection, so that an installation (a rerun of a node
// that runs) and a helper run exclude each other.
//
// One service-account child serves a run's steps one request at a time,
// each with an Env of its own; the lock is held by the child across them:
//
//   - the check of every step (StepCheck) takes it when install.lock
//     exists (a node whose helper never ran has none; a converged rerun
//     writes nothing, not even this file), so a rerun finds a helper
//     running before its journal begins: a refusal, nothing changed;
//   - node_root and every step up to register take it, creating the file
//     when missing, and keep it;
//   - it is released once register was run or verified, and before any
//     other request (wait_ready: the unit runs, and its node program runs
//     the helper, which needs the lock), and when the child ends.
//
// It is the only lock an installation takes in the node root, so the
// order is the helper's (install.lock, then a generation's lease): both
// try without waiting, and neither waits on the other. A busy lock is a
// refusal (noderoot.ErrInstallLocked, "Another node installation is
// running") that changed nothing.
type InstallLock struct {
	l *safefile.FileLock
}

// take takes the lock through e unless it is held; create says whether a
// missing install.lock is created.
func (h *InstallLock) take(e *NodeEnv, create bool) error {
	if h.l == nil {
		l, err := e.TryInstallLock(create)
		if err != nil {
			return err
		}
		h.l = l
	}
	if h.l != nil {
		e.ShareInstallLock(h.l)
	}
	return nil
}

// Held reports whether the lock is held.
func (h *InstallLock) Held() bool { return h != nil && h.l != nil }

// Release releases the lock, if held.
func (h *InstallLock) Release() {
	if h != nil && h.l != nil {
		h.l.Unlock()
		h.l = nil
	}
}

// underInstallLock reports whether the service-account step runs under
// install.lock: node_root through register.
func underInstallLock(step string) bool {
	switch workflow.State(step) {
	case workflow.InstallNodeRoot, workflow.InstallMetadata, workflow.InstallDownloads, workflow.InstallHelper, workflow.InstallLease,
		workflow.InstallRuntime, workflow.InstallNetwork, workflow.InstallProviderConfig, workflow.InstallRegister:
		return true
	}
	return false
}
