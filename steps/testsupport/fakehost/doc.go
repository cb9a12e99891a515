// Package fakehost is test support for the install and uninstall
// workflows (steps/install, steps/uninstall): a host root in a new
// directory, with the account databases, the systemd and accounts fakes,
// and this test binary captured to run as the real service-account child
// (privsep). The test runs as root, the child as the account the fake
// databases name; nothing here runs outside a test, touches the machine's
// own /etc or systemd, or is part of the shipped installer.
//
//	<Base>/host     the host root (layout.Host.Root)
//	<Base>/engine   shared by the test and the child (mode 0777), where
//	                the fake Docker Engine keeps its state; the child finds
//	                it from its home, <Base>/host/var/lib/oac-node
package fakehost
