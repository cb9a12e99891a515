// Package releasetest builds releases for tests and development tools
// (steps/generation/generationtest, steps/record/console's tests,
// oac-devcore and oac-bench): the manifest of a microsandbox release with
// made-up image digests, and the fixed files (manifest, SHA256SUMS,
// seccomp, installer) that offer a manifest. It only builds bytes in
// memory; it verifies nothing a node relies on and is not part of the
// shipped installer.
package releasetest
