// Package trust holds the roots a client of Core or the console trusts —
// the operator's CA bundle (--core-ca, or the node's retained copy) and
// the system roots — and the transports that verify servers against them.
//
// A client with an operator CA trusts exactly that CA for Core and the
// console (CONTRACT §10): a certificate of another authority is refused in
// the TLS handshake, before any byte of the request is sent. Only a
// redirect to another host (the console's 307 to a release host for an
// artifact it does not hold) is verified against the system roots, which
// are loaded then: parsing them costs a process about 15 ms of CPU (Go
// reads the bundle and every file of /etc/ssl/certs), and every
// service-account child is a process of its own.
//
// It is a host adapter of the steps' clients (steps/host/core,
// steps/host/download) and runs in whichever process makes the request:
// root's, when install reads Core's configuration with the token, and the
// service account's, in the privsep child, the generation helper and the
// status child. It reads only certificates handed to it and the system
// bundle; it never writes a file, and Explain turns a handshake failure
// into the operator's words (a clock outside the certificate's validity).
package trust
