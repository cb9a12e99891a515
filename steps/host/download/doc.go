// Package download obtains release files over HTTPS and publishes only
// verified bytes.
//
// A Client carries everything that shapes a request: the trusted roots
// (a private CA for a development console), timeouts, the stall rule, the
// retry sleeps and a snapshot of the six proxy variables (proxy.Env). It
// speaks HTTP/1.1 only; on loopback HTTP/2 halves the throughput of a large
// transfer.
//
// Two kinds of request exist, with different rules:
//
//   - Metadata (FetchMetadata: manifest.json, SHA256SUMS and the other
//     fixed names of a console release) is read into memory, at most
//     1 MiB, and never follows a redirect: metadata stays on the console
//     the command named.
//   - Artifacts (Download) are streamed to disk and may follow HTTPS
//     redirects to the release host; after a redirect only Range and
//     If-Range (and the User-Agent) are sent, never Authorization, Cookie,
//     Referer or any other header.
//
// Both retry a transport error, an incomplete read and HTTP 408, 429, 500,
// 502, 503 and 504, three attempts in all with sleeps of 1 s and 2 s; any
// other status fails at once, naming the file and the status and never
// echoing the response body.
//
// # Download lifecycle
//
// A download of <dir>/<name> keeps its bytes in a private part file beside
// the target and publishes them only after they verify:
//
//	<dir>/.<name>.partial            bytes received so far (0600)
//	<dir>/.<name>.partial.validator  ETag (or Last-Modified) of those bytes
//	<dir>/<name>                     verified bytes only (mode from the caller)
//
//	target verifies ──────────────────────────────► reuse (cache hit)
//	target differs ───────────────────────────────► ErrTargetConflict
//	part present ── re-hash part ── Range: bytes=<size>- + If-Range ──┐
//	no part ─────────────────────── GET ──────────────────────────────┤
//	        206 at <size> ── append, hash ──┐                         │
//	        200 ── truncate, hash from 0 ───┤                         │
//	        416, Content-Range elsewhere ── discard part, GET again ──┘
//	                                        ▼
//	        size and sha256 match ── chmod, fsync, rename, fsync dir ──► target
//	        mismatch ── remove part ──► ErrChecksum / ErrSize
//
// The sha256 is computed while streaming, in one pass: a resumed download
// hashes the kept part once and then continues with the stream. The
// receiving goroutine hashes; a spool goroutine writes, starting the
// writeback every 8 MiB, so the network, the CPU and the disk work at the
// same time and the final fsync finds little left to do. A transfer
// that brings less than 64 KiB in 60 s is stopped, keeps its part and tells
// the operator to rerun the same command; the rerun asks only for the
// missing bytes. An existing target is never replaced: one that verifies is
// reused, one that does not is refused with ErrTargetConflict, because only
// the caller knows whether those bytes are disposable (an unregistered
// node's leftovers) or must stay (a registered node's files, which repair
// refuses to replace). The caller removes them and calls again when they
// are disposable.
//
// # Errors
//
// Every failure to obtain verified bytes from the network is a
// *TransferError, which matches ErrTransfer; the generation helper exits 65
// on errors.Is(err, ErrTransfer) and never parses message text. Checksum,
// size, stall, redirect, oversize and status failures carry their own
// sentinels beneath it. Local failures (disk, permissions, an existing
// target with other bytes, too little free space) and cancellation are not
// transfer errors.
//
// # Proxies
//
// The proxy snapshot is a proxy.Env, parsed by its Selector, the
// installer's one parser of proxy URLs and no_proxy lists (steps/record/proxy
// documents the rules). HTTPS goes through CONNECT. Proxy credentials never
// appear in an error: messages are scrubbed of them (Selector.Secrets) at
// the package boundary.
package download
