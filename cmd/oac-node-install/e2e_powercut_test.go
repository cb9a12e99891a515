//go:build e2e && crashtest

package main

import (
	"testing"

	"github.com/openagentcore/oac-node-install/journal/powercut"

	"github.com/openagentcore/oac-node-install/steps/testhost"
)

// Power-cut mode (make e2e-powercut, -tags e2e,crashtest): each host's
// copies of /etc and /var/lib live on the power-cut file system; at the
// crash point the host loses power (everything not made durable is gone)
// and boots again on the reverted copies, starting the units enabled there,
// before the rerun.

func requirePowerCut(t *testing.T) {
	if err := powercut.Available(); err != nil {
		t.Skipf("end-to-end power cut: %v", err)
	}
}

func startPowerCutHost(t *testing.T) *testhost.Host { return testhost.StartPowerCut(t) }

// powerCut cuts the host's power and reboots it.
func (h *crashHost) powerCut(t *testing.T) {
	t.Helper()
	lost, err := h.PowerCut()
	if err != nil {
		t.Fatal(err)
	}
	h.lost += len(lost)
	if len(lost) > 0 {
		t.Logf("the power cut lost %d paths: %v", len(lost), lost)
	}
}
