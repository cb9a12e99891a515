// Package systemdtest holds a fake systemd.Manager for the tests of the
// steps that start, stop and inspect the node's unit. It keeps units in
// memory, loads unit names from a directory on Reload the way systemd reads
// /etc/systemd/system, records every call, and lets a test inject failures
// and unit states.
package systemdtest
