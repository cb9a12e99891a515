//go:build e2e && crashtest

package main

import (
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/powercut"
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

// powerCut cuts the host's power and reboots it, and logs what the cut
// lost: paths of /etc and /var/lib whose type, mode, owner, content or link
// target changed (powercut reports every path it re-created).
func (h *crashHost) powerCut(t *testing.T) {
	t.Helper()
	defer h.r.timed("power cut")()
	before := h.tree(t, "")
	if _, err := h.PowerCut(); err != nil {
		t.Fatal(err)
	}
	if lost := before.diff(h.tree(t, ""), nil); len(lost) > 0 {
		h.lost += len(lost)
		t.Logf("the power cut lost:\n%s", strings.Join(lost, "\n"))
	}
}
