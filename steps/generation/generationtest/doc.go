// Package generationtest builds what the tests of the workflows' steps run
// against: fixture releases (a real Runtime image archive, a seccomp
// profile and a fake msb), one TLS origin serving them through the real
// console handler together with a fake Core configuration route, a node
// root as an installation leaves it, and DiffHost: treetest's diff of two
// snapshots of a host root, which allows for the host lock a command may
// create even when it changes nothing.
//
// The tests of steps/generation, steps/noderoot, steps/install,
// steps/uninstall and the command's import it; it runs in the test's
// process, as whatever account the test runs as, and only under the test's
// temporary directories. It
// is never part of the shipped installer: the fixtures' releases are
// removed by Cleanup, which each importing test binary calls from
// TestMain.
package generationtest
