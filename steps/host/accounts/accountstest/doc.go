// Package accountstest holds a fake accounts.Adapter for the tests of the
// steps that create, adopt and remove the service account (steps/install,
// steps/uninstall, steps/testsupport/fakehost). It edits etc/passwd and
// etc/group under a temporary root the way shadow-utils would, so
// accounts.Under(root) lookups see its changes. It runs no shadow-utils
// command, never touches the machine's own databases, and is not part of
// the shipped installer.
package accountstest
