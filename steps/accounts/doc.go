// Package accounts reads the host's account databases (/etc/passwd,
// /etc/group) without cgo or NSS, and will hold the adapter that changes them
// through shadow-utils (useradd, usermod, gpasswd, userdel), whose locking
// keeps /etc/passwd consistent. Lookups name the database files explicitly so
// tests and private namespaces can point them elsewhere.
package accounts
