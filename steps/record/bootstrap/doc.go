// Package bootstrap renders the command an operator pastes on a node host
// to install, rerun or uninstall a node (CONTRACT §10 "Bootstrap command
// generator", following §5.1, with §5.2's CA and insecure-origin
// insertions).
//
// The command is a bash subshell that starts with a space (kept out of the
// shell history under HISTCONTROL=ignorespace) and:
//
//	checks Linux/x86_64, curl, sha256sum, flock, and sudo unless root
//	keeps a private cache $HOME/.oac/node-bootstrap (0700, owned, no links)
//	takes download.lock with flock -n (another download running: exit 1)
//	fetches <console>/node-install/oac-node-install into download.partial
//	  (at most 64 MiB, aborted below 1 KiB/s for 60 s, no redirects)
//	checks its sha256, chmod 700, renames it to <sha256> in the cache
//	releases the lock, then runs the installer directly (through sudo
//	  unless root, keeping the six proxy variables)
//
// The enrollment token is never an argument of any process: the install
// command feeds it to the installer's standard input with the shell
// builtin printf, and it appears only in the text the operator pastes.
// Every value is single-quoted with ' written as '\”.
//
// Render validates its Options first; a refusal wraps ErrInvalid in a
// *FieldError naming the option.
package bootstrap
