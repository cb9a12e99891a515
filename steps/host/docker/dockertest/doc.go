// Package dockertest serves a fake Docker Engine API on a unix socket, for
// tests of code that uses steps/host/docker: the adapter's real client code path
// (version negotiation, error classification, JSON streams) runs against
// it without an engine.
//
// It serves only the routes the adapter calls: /_ping, /info,
// /images/{ref}/json, /images/load, /networks/{id}, /networks/create,
// DELETE /networks/{id} and /containers/json, with or without a /v1.xx
// prefix. Loading checks the archive (plain or gzip-compressed) with
// steps/record/image.IdentifyStream and registers the image under its
// config digest (the classic store) or,
// with ContainerdStore set, its manifest digest. State lives in memory and
// is read and arranged through the Engine's methods.
//
// FileEngine is the other fake: it implements the adapter's interfaces
// directly (no API) and keeps its state in a JSON file, for tests whose
// engine must survive a killed process or be shared with a child process
// running as the service account.
package dockertest
