// Package ident checks the identifier formats the platform exchanges:
// canonical UUIDs (installation and node ids), lowercase hex digests,
// http(s) origins (ParseOrigin, with the loopback rule of
// --allow-insecure-origin) and enrollment tokens (CheckToken).
// Every package that validates one uses these, so the rules cannot drift.
package ident
