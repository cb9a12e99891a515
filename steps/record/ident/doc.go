// Package ident checks the identifier formats the platform exchanges:
// canonical UUIDs (installation and node ids, CanonicalUUID), lowercase hex
// digests (LowerHex), http(s) origins (ParseOrigin, refusing with an
// *OriginError that names the reason) with the one loopback rule of
// --allow-insecure-origin (IsLoopbackHost, PlainHTTPToRemote), and
// enrollment tokens (CheckToken, whose refusal never holds the token).
// Every package that validates one uses these, so the rules cannot drift;
// each caller keeps its own stricter checks and its own wording.
package ident
