// Package release reads and writes the release metadata a node installs
// from, and the canonical deployment specification it is pinned to.
//
// A release is identified by its 40-hex source_commit. Its console payload
// holds a few fixed files and the release's flat, versioned artifacts:
//
//	releases/<source_commit>/
//	  manifest.json          every artifact's file name, size and sha256, both
//	                         image identities, the microsandbox digests
//	  SHA256SUMS             sha256 of every fixed file (manifest.json included)
//	  oac-node-install       the installer binary (CONTRACT §9)
//	  runtime/seccomp.json   the Docker seccomp profile
//	  artifacts/oac-<source_commit>-linux-amd64-<suffix> ...
//
// Trust flows from SHA256SUMS to manifest.json (its hash must be listed and
// equal) and from manifest.json to every artifact (size and sha256), so
// VerifyRelease is the one entry point that turns downloaded metadata bytes
// into a Release. The artifact catalog (catalog.go) names, per provider, the
// logical paths a node needs; every catalog path except the policy role must
// be declared in the manifest.
//
// A deployment specification (specification.go) is what Core asks a node to
// run. Its canonical serialisation, with ordered keys and compact separators,
// is hashed into the specification digest that Core, the node program and the
// installer compare; MatchRelease checks that its runtime is exactly the one
// the manifest describes.
//
// Parsing is strict where the original Python installer was strict: integers
// must be JSON integers (booleans, floats and strings are refused), hex digests
// are lowercase, metadata files are at most 1 MiB. Keys a newer release writes
// into manifest.json that this installer does not know are ignored (they are
// covered by the manifest's hash); unknown keys in a specification are refused
// because they would change its digest.
package release
