// Package downloadtest holds test doubles for the installer's HTTP clients:
// an HTTP proxy that records what it was asked. It is imported by tests
// only.
package downloadtest
