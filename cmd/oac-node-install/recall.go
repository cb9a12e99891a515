package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// recorded is what root's bookkeeping says installation id was given, and
// whether it says enough for a rerun with only --installation-id: where
// its files come from and, when it was installed with --core-ca, root's
// copy of the CA beside the host record. found is false for an
// installation the host does not record (a new one, one interrupted before
// its records step, or one of the platform's installer not yet taken over).
type recorded struct {
	inst     bookkeeping.Installation
	found    bool
	caCopy   string // root's copy of the Core CA, "" when there is none
	complete bool
}

// recall reads root's record of installation id (read-only).
func recall(h layout.Host, id ident.InstallationID) (recorded, error) {
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrNotExist) {
		return recorded{}, nil
	}
	if err != nil {
		return recorded{}, fmt.Errorf("read the installer's bookkeeping %s: %w", h.Bookkeeping(), err)
	}
	defer db.Close()
	inst, err := db.GetInstallation(id)
	if errors.Is(err, bookkeeping.ErrNotFound) {
		return recorded{}, nil
	}
	if err != nil {
		return recorded{}, fmt.Errorf("read the installer's bookkeeping %s: %w", h.Bookkeeping(), err)
	}
	r := recorded{inst: inst, found: true}
	if inst.CoreCA != "" {
		p := hostrecord.CoreCACopy(h, id)
		if ok, err := safefile.Exists(p); err == nil && ok {
			r.caCopy = p
		}
	}
	r.complete = (inst.SourceURL != "" || inst.Bundle != "") && (inst.CoreCA == "" || r.caCopy != "")
	return r, nil
}

// soleInstallation is the host's one recorded installation, when it has
// exactly one.
func soleInstallation(h layout.Host) (ident.InstallationID, bool) {
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if err != nil {
		return "", false
	}
	defer db.Close()
	insts, err := db.ListInstallations()
	if err != nil || len(insts) != 1 {
		return "", false
	}
	return insts[0].ID, true
}

// fillFromRecord fills the install flags a rerun left out from root's
// record of the installation, so that `oac-node-install --installation-id
// <id>` continues it as first given. given names the flags the command
// line set. A flag given is compared with the record after validation
// (agreeWithRecord).
func (f *installerFlags) fillFromRecord(r recorded, given func(string) bool) error {
	if !r.found {
		return nil
	}
	in := r.inst
	if !given(flagSourceURL) && !given(flagBundle) {
		switch {
		case in.Bundle != "":
			f.bundle = in.Bundle
		case in.SourceURL != "":
			f.sourceURL = in.SourceURL
		default:
			return usagef("this host does not record where installation %s's files come from (it was installed by an earlier version of this installer or by the platform's installer): give --source-url (or --bundle) as in the command Web generated this once; later reruns need only `sudo oac-node-install --installation-id %s`", in.ID, in.ID)
		}
	}
	if !given(flagCoreURL) {
		f.coreURL = in.CoreURL
	}
	if !given(flagProvider) {
		f.provider = in.Provider
	}
	if !given(flagAllowInsecureOrigin) {
		f.allowInsecureOrigin = in.AllowInsecureOrigin
	}
	if !given(flagCoreCA) && in.CoreCA != "" {
		if r.caCopy == "" {
			return usagef("installation %s was installed with --core-ca (a CA bundle with sha256 %s) and this host keeps no copy of it of root's yet (it was installed by an earlier version of this installer or by the platform's installer): give --core-ca once with the path of that file in a directory only root can write; later reruns need only `sudo oac-node-install --installation-id %s`", in.ID, in.CoreCA, in.ID)
		}
		f.coreCA = r.caCopy
	}
	return nil
}

// agreeWithRecord refuses a flag given that says otherwise than root's
// record of the installation, naming the difference, before anything is
// read or changed. The Core CA's bytes are compared once read (the host
// record check of steps/install).
func (f *installerFlags) agreeWithRecord(r recorded) error {
	if !r.found {
		return nil
	}
	in := r.inst
	differ := func(flag, recordedValue, given string) error {
		return usagef("installation %s was installed with --%s %s, but this command says %s; rerun it without --%s (the host remembers it: `sudo oac-node-install --installation-id %s`), or remove the node and add it again to change it",
			in.ID, flag, recordedValue, given, flag, in.ID)
	}
	switch {
	case in.Bundle != "" && f.bundle == "":
		return differ(flagBundle, in.Bundle, "--source-url "+f.sourceURL)
	case in.Bundle != "" && f.bundle != in.Bundle:
		return differ(flagBundle, in.Bundle, "--bundle "+f.bundle)
	case in.SourceURL != "" && f.sourceURL == "":
		return differ(flagSourceURL, in.SourceURL, "--bundle "+f.bundle)
	case in.SourceURL != "" && f.sourceURL != in.SourceURL:
		return differ(flagSourceURL, in.SourceURL, "--source-url "+f.sourceURL)
	case f.coreURL != in.CoreURL:
		return differ(flagCoreURL, in.CoreURL, "--core-url "+f.coreURL)
	case f.provider != "" && in.Provider != "" && f.provider != in.Provider:
		return differ(flagProvider, in.Provider, "--provider "+f.provider)
	case f.allowInsecureOrigin && !in.AllowInsecureOrigin:
		return usagef("installation %s was installed without --allow-insecure-origin; rerun the command without it (`sudo oac-node-install --installation-id %s`)", in.ID, in.ID)
	}
	return nil
}

// shortCommand is the rerun command of a recorded installation.
func shortCommand(program string, id ident.InstallationID) string {
	return "sudo " + program + " --" + flagInstallationID + " " + id.String()
}
