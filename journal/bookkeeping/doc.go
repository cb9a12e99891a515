// Package bookkeeping records what the installer created on the host, so
// that uninstall removes exactly that and nothing else: the installations,
// whether the installer created or adopted the node account (and the
// adopted home's original mode), the supplementary groups it added, the
// files it wrote (unit, env file, /etc/oac-node records) and the Docker
// networks it created, each file and network owned by one installation,
// and the command's root-owned copy on the host, shared by all of them.
//
// It is a bbolt database, root-owned with mode 0600 (by default
// /etc/oac-node/installer.db). bbolt holds an exclusive file lock while the
// database is open, so a process opens it, makes its changes and closes it
// again; Open gives up after a timeout, naming the file. Every logical
// change is one Update transaction, values are JSON, and records are
// decoded (copied) before their transaction ends. Workflow progress is not
// kept here; it lives in journal files.
//
// # Layout
//
//	installer.db
//	└── oac-node-installer                 root bucket
//	    ├── version → "2"                  schema version, decimal
//	    ├── command → Command              the command's copy on the host,
//	    │                                  optional (no migration: readers
//	    │                                  that do not know it ignore it)
//	    ├── installations
//	    │   └── <installation id> → Installation
//	    ├── account
//	    │   └── record → Account           absent until the account exists
//	    ├── groups
//	    │   └── <group name> → Group
//	    ├── files
//	    │   └── <absolute path> → File     owner installation and kind
//	    └── networks                       since version 2
//	        └── <network name> → Network   owner installation; unlabelled
//	                                       for the platform installer's
//	                                       network (optional key, no
//	                                       migration)
//
// A takeover of a node the platform's installer made (TakeOver) writes
// the installation, account, groups, files and network in one Update.
//
// # Migrations
//
// The schema version is the number of migrations applied. Open applies the
// missing ones in order, all in one Update with the new version, so a
// database is never left between versions. A database of a newer version
// than this program knows is refused (ErrNewer), never downgraded. A
// migration is appended, never edited; each has a test starting from the
// layout before it.
package bookkeeping
