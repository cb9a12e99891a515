package main

import "github.com/openagentcore/oac-node-install/steps/record/layout"

// flagHostRoot is the test builds' flag that moves every host path under a
// directory (hostroot_testhost.go). The shipped binary has no such flag: the
// root of the host's paths decides which etc/passwd root reads, hence which
// uid the service-account child gets.
const flagHostRoot = "host-root"

// host is the set of host paths this run uses: the real host unless a test
// set hostRoot.
func (c *cli) host() layout.Host {
	if c.hostRoot == "" {
		return layout.Default
	}
	return layout.Host{Root: c.hostRoot}
}
