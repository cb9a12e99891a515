package generation

import (
	"errors"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// lockStub is a Data whose locks are as the test says.
type lockStub struct {
	noderoot.Data
	install, lease, exists bool
}

func (s lockStub) Locked() (bool, bool)       { return s.install, s.lease }
func (s lockStub) LeaseExists() (bool, error) { return s.exists, nil }
func (s lockStub) Identity() lease.Identity   { return lease.Identity{Generation: 2} }

func TestLockStepRequiresTheLocks(t *testing.T) {
	cases := []struct {
		name   string
		action string
		stub   lockStub
		ok     bool
	}{
		{"everything held", noderoot.ActionRepair, lockStub{install: true, lease: true, exists: true}, true},
		{"no install lock", noderoot.ActionCollect, lockStub{lease: true, exists: true}, false},
		{"repair without the lease", noderoot.ActionRepair, lockStub{install: true, exists: true}, false},
		{"collect without the lease", noderoot.ActionCollect, lockStub{install: true}, false},
		{"prepare of a new generation", noderoot.ActionPrepare, lockStub{install: true}, true},
		{"prepare with an existing lease not held", noderoot.ActionPrepare, lockStub{install: true, exists: true}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := lockStep{tc.stub, tc.action}.Run(t.Context(), nil)
			if tc.ok != (err == nil) {
				t.Fatalf("lock step: %v", err)
			}
			if err != nil && (!errors.Is(err, ErrNotLocked) || !workflow.IsUnchanged(err)) {
				t.Fatalf("lock step: %v, want an unchanged ErrNotLocked", err)
			}
		})
	}
}

func TestRepairProbeRefusesAnotherLocalImage(t *testing.T) {
	t.Parallel()
	n, _, spec := preparedNode(t)
	// The engine now identifies the image by its manifest digest: the
	// configured local ID no longer names it.
	n.docker.ContainerdStore = true
	err := n.run(noderoot.ActionRepair, 2, spec)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("repair: %v, want ErrNotReady", err)
	}
}
