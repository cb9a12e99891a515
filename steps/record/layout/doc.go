// Package layout names every path the installer uses on a host, in one
// place: the root-owned records and journals, the service account's home and
// node roots, the unit and its environment file (CONTRACT §3, §3.4, §4.1).
//
// A Host is rooted at "/" on a real host; tests root it in a temporary
// directory or run it inside a private mount namespace.
package layout
