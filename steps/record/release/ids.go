package release

import "github.com/openagentcore/oac-node-install/steps/record/ident"

// IsCommit reports whether s is a source commit: 40 lowercase hex digits.
func IsCommit(s string) bool { return ident.LowerHex(s, 40) }

// IsSHA256 reports whether s is a sha256 in 64 lowercase hex digits.
func IsSHA256(s string) bool { return ident.LowerHex(s, 64) }

// IsDigest reports whether s is an image digest: "sha256:" and 64 lowercase
// hex digits.
func IsDigest(s string) bool {
	const p = "sha256:"
	return len(s) > len(p) && s[:len(p)] == p && ident.LowerHex(s[len(p):], 64)
}

// IsRuntimeRef reports whether s is a microsandbox Runtime reference:
// "oac-runtime@sha256:" and 64 lowercase hex digits.
func IsRuntimeRef(s string) bool {
	const p = "oac-runtime@"
	return len(s) > len(p) && s[:len(p)] == p && IsDigest(s[len(p):])
}
