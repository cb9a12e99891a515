// Package accounts reads the host's account databases (/etc/passwd,
// /etc/group) without cgo or NSS, changes them through shadow-utils, and
// decides whether an existing oac-node account may be adopted.
//
// Lookups (Databases) name the database files explicitly so tests and
// private namespaces can point them elsewhere. Facts gathers what the
// adoption rules look at.
//
// Adapter lists the account changes the installer and its uninstall make,
// each one shadow-utils command whose locking keeps /etc/passwd and
// /etc/group consistent (CONTRACT §4.5 step 5, §10 "Account"):
//
//	CreateServiceAccount  useradd --system --no-log-init --user-group --no-create-home --home-dir /var/lib/oac-node --shell <nologin> oac-node
//	AddToGroup            usermod --append --groups <group> oac-node
//	RemoveFromGroup       gpasswd --delete oac-node <group>
//	DeleteServiceAccount  userdel oac-node
//	DeleteServiceGroup    groupdel oac-node
//	RemoveShadowOrphans   pwconv
//	RestrictGroup         gpasswd --restrict oac-node
//	RemoveGshadowOrphans  grpconv
//
// Commands is the real Adapter: it runs those programs directly (no shell)
// from the installer's fixed PATH, with a fixed environment and standard
// input /dev/null. shadow-utils fsyncs nothing, so after each command
// Commands makes passwd, group, shadow, gshadow and /etc durable
// (Databases.Sync); steps that find a change already made call Sync too.
// Package accountstest holds a fake that edits database files under a
// temporary root, so lookups see its changes.
//
// Decide applies the adoption rules of CONTRACT §10 to looked-up facts: an
// existing oac-node is adopted only with home /var/lib/oac-node, a nologin
// shell (/bin/false refuses), uid and gid other than 0 and groups within
// its own, docker and kvm; without an account, an existing
// /var/lib/oac-node refuses (orphan home). Every refusal wraps
// ErrNotAdoptable and says what to do; it is a *AdoptionError, which the
// caller returns as a workflow.Refusal, so the command that prints it ends
// with "Nothing was changed.".
//
// CheckRecorded compares the host's oac-node with the account the
// installer's bookkeeping records (Recorded: its uid and gid): an account
// deleted by hand (its uid perhaps another account's now) or made again
// with other ids is a Mismatch. The node's files belong to the recorded
// uid, so install and uninstall refuse such a host before any change
// (Mismatch.Refusal, wrapping ErrNotRecorded) and nothing runs as, is
// given to, or is removed for the account of that name; the Mismatch
// names who holds the recorded uid and the commands that give the account
// back its ids when they are free.
package accounts
