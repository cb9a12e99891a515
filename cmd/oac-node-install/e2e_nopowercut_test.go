//go:build e2e && !crashtest

package main

import "testing"

// The power-cut file system exists only in crashtest builds: make
// e2e-powercut runs these tests with -tags e2e,crashtest.

func requirePowerCut(t *testing.T) {
	t.Skip("end-to-end power cut: needs -tags e2e,crashtest (make e2e-powercut)")
}

func (h *crashHost) powerCut(t *testing.T) {
	t.Skip("end-to-end power cut: needs -tags e2e,crashtest (make e2e-powercut)")
}
