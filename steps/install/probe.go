package install

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Probe is every check install runs before its first change, run the way
// the check command runs them: without the enrollment token, without
// Core's configuration, and without changing anything (the bookkeeping is
// opened read-only). It reuses install's own checks: the host record
// (CheckHostRecord), the Preflight's host and provider checks, and the
// account adoption rules (accounts.Decide over the facts the account step
// reads).
type Probe struct {
	Options Options
	Host    layout.Host
	Environ []string
	Machine string
	// Engine is the Docker Engine; NoEngine, when set, says why it is not
	// asked (without root its socket refuses the caller).
	Engine   Engine
	NoEngine string
	// NoRoot, when set, says why the checks that read root's private files
	// (the bookkeeping) are skipped.
	NoRoot string
	// Configuration is Core's configuration, read with the enrollment
	// token the check command was given on standard input (reading it
	// does not consume the token), or ConfigurationErr why it could not
	// be. Without either, the checks that need it are skipped. With it,
	// the provider is Core's deployment's, the capacity check has the
	// sandbox size, and the space check reads the release's sizes from
	// the console (through Roots and Proxy).
	Configuration    *core.Configuration
	ConfigurationErr error
	Roots            *trust.Roots
	Proxy            proxy.Env
}

// Names of the checks a Probe adds to the Preflight's.
const (
	CheckHostRecordName    = "host record"
	CheckConfigurationName = "Core's deployment specification"
	CheckAccountName       = "service account " + layout.Account
	// CheckSystemdName is the Preflight's check that systemd runs the host.
	CheckSystemdName = "systemd"
)

// Run returns every check in install's order: the host record, Core's
// configuration (skipped: it needs the token or the node's credential),
// the host checks, each provider's checks (the --provider one, else the
// recorded one, else both), and the account.
func (p Probe) Run(ctx context.Context) []Check {
	o := p.Options
	var checks []Check
	known, err := knownNode(p.Host, o.InstallationID)
	provider := o.Provider
	switch {
	case err != nil:
		checks = append(checks, Check{Name: CheckHostRecordName, Err: err})
	case !known:
		checks = append(checks, skip(CheckHostRecordName, "this host has no record of the installation: a new node"))
	default:
		c := Check{Name: CheckHostRecordName, Err: CheckHostRecord(p.Host, o)}
		if rec, err := readHostRecord(p.Host, o.InstallationID); err == nil && provider == "" {
			provider = rec.Provider
		}
		checks = append(checks, c)
	}
	conf := p.Configuration
	switch {
	case p.ConfigurationErr != nil:
		checks = append(checks, Check{Name: CheckConfigurationName, Err: p.ConfigurationErr})
	case conf != nil:
		checks = append(checks, Check{Name: CheckConfigurationName + " (provider " + conf.Provider + ")"})
		provider = conf.Provider
	case known:
		checks = append(checks, skip(CheckConfigurationName, "install reads it as the node account with the node's credential; check contacts no one"))
	default:
		checks = append(checks, skip(CheckConfigurationName, "install reads it with the enrollment token: give it on standard input (--enrollment-token-stdin) to check the sandbox size, the free space and the provider Core's deployment uses"))
	}
	pf := &Preflight{Host: p.Host, InstallationID: o.InstallationID, NewNode: !known, Engine: p.Engine,
		Environ: p.Environ, Machine: p.Machine, NoEngine: p.NoEngine,
		NoSize: "the sandbox size is in Core's deployment specification"}
	if conf != nil {
		pf.CPUs, pf.MemoryMiB, pf.NoSize = conf.Specification.Resources.CPUs, conf.Specification.Resources.MemoryMiB, ""
	}
	if ok, _ := safefile.Exists(hostrecord.PlatformAccountPath(p.Host)); ok {
		// A node of the platform's installer: install takes it over when
		// its records agree with the host (the network is checked by
		// install itself).
		tc := Check{Name: "the platform installer's node can be taken over"}
		tk, err := FindTakeover(ctx, p.Host, o.InstallationID, nil)
		tc.Err = err
		pf.Takeover = err == nil && tk != nil
		checks = append(checks, tc)
	}
	checks = append(checks, pf.HostChecks()...)
	providers := []string{provider}
	if provider == "" {
		providers = []string{release.ProviderDocker, release.ProviderMicrosandbox}
	}
	per := make([][]Check, len(providers))
	for i, name := range providers {
		if name == release.ProviderMicrosandbox {
			pf.HostCPUs, pf.HostMemoryMiB = hostCapacity()
		}
		per[i] = append(pf.ProviderChecks(ctx, name), p.space(ctx, name, known))
	}
	if len(providers) > 1 {
		passOnOne(providers, per)
	}
	for _, list := range per {
		checks = append(checks, list...)
	}
	return append(checks, p.account())
}

// passOnOne names each provider's checks after it and, when one provider's
// checks all pass, turns the other's failures into skipped checks that say
// what would fail: which provider a node uses is Core's deployment's to
// say, and a host needs to serve only that one.
func passOnOne(providers []string, per [][]Check) {
	passes := ""
	for i, list := range per {
		if !slices.ContainsFunc(list, Check.Failed) && passes == "" {
			passes = providers[i]
		}
	}
	for i, list := range per {
		for j := range list {
			c := &list[j]
			c.Name = providers[i] + ": " + c.Name
			if c.Failed() && passes != "" {
				msg := c.Err.Error()
				if c.Hint != "" {
					msg += "; " + c.Hint
				}
				c.Skipped = "fails, and matters only if Core's deployment uses " + providers[i] + " (" + passes + "'s checks pass): " + msg
				c.Err, c.Hint = nil, ""
			}
		}
	}
}

// account refuses an account that is not the recorded one and applies the
// adoption rules to the host's account, home and bookkeeping record, as
// the account step does, changing nothing.
func (p Probe) account() Check {
	c := Check{Name: CheckAccountName}
	var rec bookkeeping.Account
	var recorded bool
	path := p.Host.Bookkeeping()
	if _, err := os.Lstat(path); err == nil {
		if p.NoRoot != "" {
			c.Skipped = p.NoRoot + " to read " + path
			return c
		}
		db, err := bookkeeping.OpenReadOnly(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			c.Err = err
			return c
		}
		if err == nil { // else bookkeeping.ErrHoldsNothing: no record
			rec, recorded, err = db.Account()
			db.Close()
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			c.Err = err
			return c
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		c.Err = err
		return c
	}
	facts, err := adoptionFacts(accounts.Under(p.Host.Root), p.Host.Home(), rec, recorded)
	if err == nil {
		_, err = accounts.Decide(facts)
		err = workflow.Refuse(err)
	}
	if err == nil && facts.User == nil {
		c.Name += " (not on this host: install creates it)"
	}
	// The adoption rules name an account made again with another uid
	// themselves; a gone account (which they may take for an orphan home)
	// or a changed gid is checkRecorded's to name.
	if !errors.Is(err, accounts.ErrNotRecorded) {
		if rerr := checkRecorded(accounts.Under(p.Host.Root), rec, recorded, p.Options.InstallationID); rerr != nil {
			err = rerr
		}
	}
	c.Err = err
	return c
}
