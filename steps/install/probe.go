package install

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
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
}

// Names of the checks a Probe adds to the Preflight's.
const (
	CheckHostRecordName    = "host record"
	CheckConfigurationName = "Core's deployment specification"
	CheckAccountName       = "service account " + layout.Account
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
	if known {
		checks = append(checks, skip(CheckConfigurationName, "install reads it as the node account with the node's credential; check contacts no one"))
	} else {
		checks = append(checks, skip(CheckConfigurationName, "install reads it with the enrollment token, which check never reads"))
	}
	pf := &Preflight{Host: p.Host, InstallationID: o.InstallationID, NewNode: !known, Engine: p.Engine,
		Environ: p.Environ, Machine: p.Machine, NoEngine: p.NoEngine,
		NoSize: "the sandbox size is in Core's deployment specification"}
	checks = append(checks, pf.HostChecks()...)
	providers := []string{provider}
	if provider == "" {
		providers = []string{release.ProviderDocker, release.ProviderMicrosandbox}
	}
	for _, name := range providers {
		if name == release.ProviderMicrosandbox {
			pf.HostCPUs, pf.HostMemoryMiB = hostCapacity()
		}
		for _, c := range append(pf.ProviderChecks(ctx, name), p.space(ctx, name, known)) {
			if len(providers) > 1 {
				c.Name = name + ": " + c.Name
			}
			checks = append(checks, c)
		}
	}
	return append(checks, p.account())
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
		if err != nil {
			c.Err = err
			return c
		}
		rec, recorded, err = db.Account()
		db.Close()
		if err != nil {
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
