// Package ident checks the identifier formats the platform exchanges:
// canonical UUIDs (installation and node ids) and lowercase hex digests.
// Every package that validates one uses these, so the rules cannot drift.
package ident
