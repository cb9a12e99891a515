package main

import "github.com/openagentcore/oac-node-install/steps/privsep"

// field is how status and leases print any value they did not compose
// themselves — paths, workflow and step names, error texts, notes, hints,
// a holder's command: what the service account wrote, or chose, reaches the
// terminal with its controls replaced and its line breaks shown as \n, so
// that it can neither drive the terminal nor print a line of its own.
func field(s string) string { return privsep.SanitizeField(s) }
