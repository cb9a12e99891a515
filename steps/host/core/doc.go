// Package core is the installer's one client of Core's node routes
// (CONTRACT §2.2, §2.3): the configuration route, read with an enrollment
// token before a node exists or with the node's credential after, and the
// identity route, read with the node's credential.
//
// A Client never follows a redirect and puts its credential only in the
// Authorization header. Core's refusals of the configuration read are one
// *StatusError whose hint depends on the credential (the next step differs:
// a new command from Web for a token, a reinstall for a node credential);
// the statuses worth another attempt are download.RetryableStatus, the
// installer's one list for every remote. Configuration is Core's
// configuration answer, validated in itself by ParseConfiguration.
package core
