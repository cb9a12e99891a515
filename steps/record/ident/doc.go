// Package ident checks the identifier formats the platform exchanges:
// canonical UUIDs (installation and node ids, CanonicalUUID), the typed
// installation id (InstallationID, made by ParseInstallationID at the edge
// where an id is typed or read as a string, and carried typed from there:
// layout's paths, the records, the workflows' options), lowercase hex
// digests (LowerHex), http(s) origins (ParseOrigin, refusing with an
// *OriginError that names the reason) with the one loopback rule of
// --allow-insecure-origin (IsLoopbackHost, PlainHTTPToRemote), and
// enrollment tokens (CheckToken, whose refusal never holds the token).
// Every package that validates one uses these, so the rules cannot drift;
// each caller keeps its own stricter checks and its own wording.
//
// Decoding JSON into an InstallationID does not validate it: every reader
// of a file or answer that holds one (the host record, the bookkeeping,
// the generation identity, provider.json, Core's configuration, a child's
// request) already refuses a non-canonical id with its own message, in its
// own order of checks, and keeps doing so with InstallationID.Valid.
package ident
