package main

import (
	"os"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/openagentcore/oac-node-install/steps/record/bootstrap"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/status"
)

// continueCommand is status.Options.InstallCommand: the install command,
// without a token, that continues installation id from root's host record.
func continueCommand(host layout.Host, id ident.InstallationID, rec *hostrecord.Record) (string, bool) {
	cmd, ok := installCommandFromRecord(host, id, rec)
	if !ok {
		return "", false
	}
	return cmd.String(), true
}

// installCommandFromRecord is the install command, without a token, of
// installation id as root's host record describes it, by the name the
// host keeps the installer under (CONTRACT §10), as in status's other
// advice: Core's origin and
// insecure-origin policy, the provider, and a Core CA when the record has
// one: the node's copy, <node root>/core-ca.pem, which the command reads
// and refuses unless its sha256 is the one root recorded, before any
// request. The console URL is recorded nowhere root owns: it is left for
// the operator. ok is false when a recorded value is not one the command
// accepts; nothing of the record reaches the advice unchecked.
func installCommandFromRecord(host layout.Host, id ident.InstallationID, rec *hostrecord.Record) (installCommand, bool) {
	c := installCommand{program: "oac-node-install", installationID: id, coreURL: rec.CoreURL,
		allowInsecureOrigin: rec.AllowInsecureOrigin, provider: rec.Provider}
	if origin, _, err := validateOrigin("core_url", rec.CoreURL, rec.AllowInsecureOrigin); err != nil || origin != rec.CoreURL {
		return c, false
	}
	switch rec.Provider {
	case "docker", "microsandbox":
	default:
		return c, false
	}
	// status names installations also by the service account's answer,
	// which is decoded unchecked.
	if !id.Valid() {
		return c, false
	}
	if r, err := recall(host, id); err == nil && r.complete {
		c.short = true
		return c, true
	}
	if rec.CoreCASHA256 != "" {
		// Never the node root's copy: the service account can write it.
		c.coreCA = coreCAPlaceholder
	}
	return c, true
}

// coreCAPlaceholder stands for the Core CA file an installation recorded
// before root kept its own copy was given.
const coreCAPlaceholder = "<Core CA file, in a directory only root can write>"

// installCommand is an install command line without a token; each value
// is one the install command accepts.
type installCommand struct {
	program string
	// sourceURL or bundle is where the node's files come from; with
	// neither, the console URL is left for the operator to fill in.
	sourceURL, bundle   string
	coreURL             string
	allowInsecureOrigin bool
	coreCA              string
	provider            string // "" when the command names none
	installationID      ident.InstallationID
	// short: root's records hold everything else, so the command is
	// only the installation id (recall.go).
	short bool
}

// consolePlaceholder stands for the console URL the host does not record.
const consolePlaceholder = status.ConsolePlaceholder

// String is the command as the operator types it: every value quoted for
// the shell where it needs to be.
func (c installCommand) String() string {
	if c.short {
		return shortCommand(c.program, c.installationID)
	}
	args := []string{"sudo", c.program}
	switch {
	case c.bundle != "":
		args = append(args, "--"+flagBundle, shellWord(c.bundle))
	case c.sourceURL != "":
		args = append(args, "--"+flagSourceURL, shellWord(c.sourceURL))
	default:
		args = append(args, "--"+flagSourceURL, consolePlaceholder)
	}
	args = append(args, "--"+flagCoreURL, shellWord(c.coreURL))
	if c.allowInsecureOrigin {
		args = append(args, "--"+flagAllowInsecureOrigin)
	}
	switch c.coreCA {
	case "":
	case coreCAPlaceholder:
		args = append(args, "--"+flagCoreCA, "'"+c.coreCA+"'")
	default:
		args = append(args, "--"+flagCoreCA, shellWord(c.coreCA))
	}
	if c.provider != "" {
		args = append(args, "--"+flagProvider, shellWord(c.provider))
	}
	return strings.Join(append(args, "--"+flagInstallationID, c.installationID.String()), " ")
}

// programName is how this program was started (argv[0]), which runs it
// again from the same shell: the Web command runs it from its download
// cache, and an installation interrupted early may not have left
// oac-node-install on the host's PATH yet. A name with a control character
// is replaced by oac-node-install.
func programName() string {
	name := os.Args[0]
	if name == "" || strings.IndexFunc(name, unicode.IsControl) >= 0 || !utf8.ValidString(name) {
		return "oac-node-install"
	}
	return shellWord(name)
}

// shellWord is s as one word for a POSIX shell: as it is when it holds
// only characters no shell treats specially, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-./:@%+=,", r))
	}) < 0 {
		return s
	}
	return bootstrap.Quote(s)
}
