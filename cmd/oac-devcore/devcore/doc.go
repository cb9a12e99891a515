// Package devcore is the development console: the stand-in for the OAC
// console (and, later, Core) that the installer talks to in tests and
// demos. It is never a second implementation of Core.
//
// Start builds a fixture release in the data directory, publishes and
// activates it through package console, and serves it over HTTPS with its
// own CA:
//
//	<data>/
//	  ca.pem, ca-key.pem      the CA (ECDSA P-256), made once; clients trust ca.pem
//	  build/                  the fixture's files before publication
//	  node-payload/           the console payload (package console layout)
//	  release-host/           what the optional release host serves
//
// The fixture release is real where the installer checks it: a Runtime image
// archive whose config and manifest digests are true (package image), a
// seccomp profile, the installer binary (or a placeholder), a node program
// (a placeholder script unless one is given), placeholder microsandbox
// files, and manifest.json and SHA256SUMS describing them. Its
// source_commit is derived from those bytes, so equal inputs give the same
// release, and a data directory can be reused.
//
// With a release host, the image archive is held only there: the manifest's
// artifact_base_url points at the release host, and the console answers
// requests for the image with a 307 redirect to it.
//
// The HTTP side is a prefix router (Server.Handle) so that Core's routes
// can be served beside /node-install/.
package devcore
