//go:build crashtest

package testhost_test

import "github.com/openagentcore/oac-node-install/journal/safefile"

// syncCount is how often this process fsynced p through safefile.
func syncCount(p string) int { return safefile.SyncCount(p) }
