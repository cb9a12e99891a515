package generation

import "github.com/openagentcore/oac-node-install/journal/safefile"

// RemoveTree removes path and everything under it without ever following
// a symbolic link (safefile.RemoveTree). A missing path is no error. Then
// it fsyncs path's parent.
func RemoveTree(path string) error { return safefile.RemoveTree(path) }
