// Package layout names every path the installer uses on a host, in one
// place: the root-owned records and journals, the service account's home and
// node roots, the unit and its environment file (CONTRACT §3, §3.4, §4.1).
//
// A Host is rooted at "/" on a real host; tests root it in a temporary
// directory or run it inside a private mount namespace. Node is the layout
// inside one node root, ~/.oac/nodes/<id>; the names of its files and
// directories (provider.json, registered.json, state/node/identity.json,
// state/node/generations, journals, releases, …) are constants here, which
// code that opened the node root as a safefile.Root uses as they are, and
// nobody else spells. The package only joins names: it opens, creates and
// checks nothing, and is the same for root and the service account.
//
// Every path keyed by an installation (Host.Record, RecordName, EnvFile,
// Unit, UnitName, JournalDir, NodeRoot, NodeRel, NodeRootIn) takes an
// ident.InstallationID, so no caller joins an unchecked string into a
// path: the id was parsed at the edge (ident.ParseInstallationID) or
// checked by the reader that decoded it.
package layout
