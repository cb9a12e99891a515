package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Command is what the install command wires: the options, the host, the
// token read from standard input, and the real adapters.
type Command struct {
	Options Options
	Host    layout.Host
	// Token is the enrollment token ("" when the command gave none).
	Token string
	// ReadToken, when set, reads the token (--enrollment-token-stdin)
	// once the checks that need no token passed, before the host lock;
	// it replaces Token.
	ReadToken func() (string, error)
	Environ   []string
	Machine   string
	Core      CoreReader
	Engine    Engine
	Accounts  accounts.Adapter
	Systemd   systemd.Manager
	// Child runs a service-account step (asaccount.Children.Run in
	// production).
	Child asaccount.Runner
	// EndChild, when set, ends the service-account child before the host
	// lock is released (asaccount.Children.Close).
	EndChild func() error
	Proxy    proxy.Env
	// Version is the binary's version, bound into the journal.
	Version string
	// Binary is the bytes of the installer that runs (its sealed copy),
	// kept as the command on the host once the node is installed; nil
	// keeps none.
	Binary Executable
	// Out receives the operator's output; Phase is told each phase.
	Out   io.Writer
	Phase func(label string)
	// Style marks up the summary (plain when zero).
	Style SummaryStyle
}

// Phases of the installation as the operator sees them (CONTRACT §6.3).
var phaseOf = map[workflow.State]string{
	workflow.InstallAccount:     "Prepare the service account",
	workflow.InstallNodeRoot:    "Download and verify node files",
	workflow.InstallLease:       "Check the sandbox runtime",
	workflow.InstallRegister:    "Register the node with Core",
	workflow.InstallEnvFile:     "Start the node service",
	workflow.InstallWaitReady:   "Wait for Core connection and provider readiness",
	workflow.InstallHostRecords: "Record the installation",
}

// statePhases maps each state of def to the phase it belongs to: the
// label of the nearest state at or before it that phaseOf names (none for
// the states before the first), so that a run resumed in the middle of a
// phase prints that phase's heading before its steps.
func statePhases(def *workflow.Definition) map[workflow.State]string {
	m := map[workflow.State]string{}
	label := ""
	for _, sd := range def.States {
		if l, ok := phaseOf[sd.Name]; ok {
			label = l
		}
		m[sd.Name] = label
	}
	return m
}

// orPhase is a phase's name for a sentence.
func orPhase(label string) string {
	if label == "" {
		return "the host checks"
	}
	return label
}

// Run installs the node or reruns an installation. The checks that read
// nothing of the host's records come first (platform, systemd, SELinux, a
// token in the environment), then the token (ReadToken), then the host
// lock, held to the end: every decision from the host's state — is the
// node known, which Core, which provider, is another Core on this host,
// is every step already satisfied — is taken under it, from root's records
// (CONTRACT §10, "Decisions under the lock"). Every refusal comes before
// the first change (Core's configuration, the preflight checks, then every
// step's read-only check); then the install workflow runs against root's
// journal, resuming an interrupted run. When every step's check is
// satisfied and no run is unfinished, Run prints the summary under
// UnchangedTitle ("No change: …") and writes nothing (the host lock file
// aside). A journal of a finished run is kept beside as a receipt and a
// new run starts (a rerun checks everything again and changes only what
// differs). The report's Run says which of these the run was: converged
// (nothing written), resumed or fresh. A refusal before the first change
// is a workflow.Refusal (the command prints "Nothing was changed."); a
// failure after it is a *workflow.Changed naming what this run changed.
func Run(ctx context.Context, c Command) (rep *workflow.Report, err error) {
	o := c.Options
	phase := func(label string) {
		if c.Phase != nil {
			c.Phase(label)
		}
	}
	bare := &Preflight{Host: c.Host, InstallationID: o.InstallationID, Environ: c.Environ, Machine: c.Machine}
	if err := FirstRefusal(bare.LockFreeChecks()); err != nil {
		return nil, err
	}
	if c.Systemd != nil {
		if err := FirstRefusal([]Check{SystemdVersionCheck(ctx, c.Systemd)}); err != nil {
			return nil, err
		}
	}
	safefile.Pausepoint("install-host-checked")
	if c.ReadToken != nil {
		tok, err := c.ReadToken()
		if err != nil {
			return nil, err
		}
		if err := CheckToken(tok); err != nil {
			return nil, workflow.Refuse(err)
		}
		c.Token = tok
	}
	safefile.Pausepoint("install-before-host-lock")
	lock, err := HostLock(ctx, c.Host, phase)
	if err != nil {
		return nil, err
	}
	defer lock.Unlock()
	defer func() {
		// Under the lock, once the node is installed: the command on the
		// host is these bytes (CONTRACT §10, "The command on the host").
		if err == nil && rep != nil && rep.Condition == workflow.Complete && c.Binary != nil {
			rep.Wrote = append(rep.Wrote, KeepCommand(c.Host, c.Binary, c.Version, c.outOrDiscard())...)
		}
	}()
	if c.EndChild != nil {
		// Before the lock goes: no process of the account's outlives the run.
		defer c.EndChild()
	}
	safefile.Pausepoint("install-host-locked")
	if err := CheckBookkeeping(c.Host, o.InstallationID); err != nil {
		return nil, err
	}
	// A node the platform's installer made is taken over once every one
	// of its records agrees with the host (CONTRACT §11); nothing is
	// recorded before every check of this command has passed.
	var engine NetworkInspector
	if c.Engine != nil {
		engine = c.Engine
	}
	takeover, err := FindTakeover(ctx, c.Host, o.InstallationID, engine)
	if err != nil {
		return nil, err
	}
	pending := takeover != nil && !takeover.Recorded
	if err := CheckAccount(c.Host, o.InstallationID); err != nil {
		return nil, err
	}
	known, err := knownNode(c.Host, o.InstallationID)
	if err != nil {
		return nil, err
	}
	unlabelled, err := UnlabelledNetwork(c.Host, o.InstallationID)
	if err != nil {
		return nil, workflow.Refuse(err)
	}
	unlabelled = unlabelled || (takeover != nil && takeover.Network != "")
	platform, err := PlatformNode(c.Host, o.InstallationID)
	if err != nil {
		return nil, workflow.Refuse(err)
	}
	platform = platform || takeover != nil
	if pending {
		if err := checkHostRecordCommand(takeover.Record, o); err != nil {
			return nil, workflow.Refuse(err)
		}
	} else if known {
		if err := CheckHostRecord(c.Host, o); err != nil {
			return nil, workflow.Refuse(err)
		}
	} else if err := checkRecordMissing(c.Host, o.InstallationID); err != nil {
		return nil, workflow.Refuse(err)
	}
	phase("Read Core's deployment specification")
	var conf *core.Configuration
	var raw []byte
	var prechecked *Output
	isRegistered := false
	if known {
		if isRegistered, err = Registered(c.Host, o.InstallationID); err != nil {
			return nil, workflow.Refuse(err)
		}
	}
	if isRegistered && c.Token != "" {
		// A re-pasted command from Web: its token is spent (Core would
		// answer 401), and a registered node needs none.
		fmt.Fprintln(c.outOrDiscard(), "The enrollment token was not needed: this node is registered with Core; it reads Core's configuration with its own credential, and the token was not used.")
		c.Token = ""
	}
	if c.Token != "" {
		conf, raw, err = c.Core.Read(ctx, o, c.Token)
		if known && errors.Is(err, ErrTokenRejected) {
			// A known node whose registration was cut off after Core
			// accepted it: its token is spent, its credential works.
			conf, raw, err, c.Token = nil, nil, nil, ""
		}
	}
	switch {
	case conf != nil || err != nil:
	case known:
		// A registered node reads with its own credential, as the node
		// account; a node that never registered needs a token. The same
		// child checks the service-account steps with what it read
		// (NodeChecks), read-only.
		in := (&Env{Opts: o, UnlabelledNetwork: unlabelled, PlatformNode: platform}).nodeInput()
		in.Check = true
		var req asaccount.Request
		req, err = childRequest(StepConfiguration, nil, in)
		var a asaccount.Answer
		if err == nil {
			a, err = c.Child(ctx, req)
		}
		var out Output
		if err == nil {
			err = a.DecodeOutput(&out)
		}
		if err == nil {
			raw = out.Configuration
			conf, err = core.ParseConfiguration(raw)
		}
		if err == nil && out.Checked {
			prechecked = &out
		}
		if err == nil {
			// The --provider assertion is checked below, against this
			// host's record too: the advice depends on both.
			anyProvider := o
			anyProvider.Provider = ""
			err = CheckConfiguration(conf, anyProvider)
		}
		if err != nil && !asaccount.Refused(err) {
			err = fmt.Errorf("%w; if the node never registered, run the command Web generated, which passes the enrollment token", err)
		}
	default:
		err = errors.New("this node is not installed yet: the command needs the enrollment token on standard input (--enrollment-token-stdin); run the command Web generated")
	}
	if err != nil {
		return nil, workflow.Refuse(err)
	}
	if known {
		// A node's provider is the recorded one: neither Core's answer nor
		// a flag moves it (its group, network and store were made for it).
		rec, err := readHostRecord(c.Host, o.InstallationID)
		if err != nil {
			return nil, workflow.Refuse(err)
		}
		if rec.Provider != conf.Provider {
			return nil, workflow.Refusef("%w: Core's deployment uses the provider %s, but this node was installed for %s, and a node's provider does not change: remove the node in Web, run `sudo oac-node-install --uninstall --installation-id %s`, then add it again with a new command from Web",
				ErrConfiguration, conf.Provider, rec.Provider, o.InstallationID)
		}
		if o.Provider != "" && o.Provider != conf.Provider {
			return nil, workflow.Refusef("%w: this node uses the provider %s (Core's deployment and this host's record agree), and this command says --provider %s: rerun it with --provider %s",
				ErrConfiguration, conf.Provider, o.Provider, conf.Provider)
		}
	}
	safefile.Pausepoint("install-configuration-read")
	phase("Check host requirements")
	res := conf.Specification.Resources
	pf := &Preflight{Host: c.Host, InstallationID: o.InstallationID, Provider: conf.Provider, NewNode: !known, Takeover: takeover != nil,
		CPUs: res.CPUs, MemoryMiB: res.MemoryMiB, Engine: c.Engine, Environ: c.Environ, Machine: c.Machine}
	if conf.Provider == "microsandbox" {
		pf.HostCPUs, pf.HostMemoryMiB = hostCapacity()
	}
	checks := pf.Run(ctx)
	if o.Bundle != "" {
		bc := &BundleCheck{Dir: o.Bundle, Provider: conf.Provider, Spec: conf.Specification, Host: c.Host}
		checks = append(checks, bc.Run())
	}
	if FirstRefusal(checks) == nil {
		checks = append(checks, c.spaceCheck(conf, known).Run(ctx))
	}
	if err := FirstRefusal(checks); err != nil {
		return nil, err
	}
	adapter := c.Accounts
	if adapter != nil && c.EndChild != nil {
		adapter = childFreeAccounts{Adapter: adapter, end: c.EndChild}
	}
	env := &Env{Opts: o, HostPaths: c.Host, Conf: conf, ConfRaw: raw, Tok: c.Token, Adapter: adapter,
		DBs: accounts.Under(c.Host.Root), Manager: c.Systemd, ProxyEnv: c.Proxy, Runner: c.Child, Out: c.Out, Style: c.Style,
		UnlabelledNetwork: unlabelled, PlatformNode: platform}
	if prechecked != nil {
		env.setNodeChecks(prechecked.Checks)
	}
	path := JournalPath(c.Host, o.InstallationID)
	// Every step checks, read-only, whether its effect is already on the
	// host: a refusal anywhere comes before the first change, and a host
	// where every step is satisfied is left exactly as it is (no journal,
	// receipt, bookkeeping transaction or lock file).
	prev, perr := workflow.InspectJournal(path, workflow.Lookup)
	// A home that is gone took every node root with it: what an unfinished
	// journal says the node-side steps did is no longer on the host.
	_, herr := os.Lstat(c.Host.Home())
	homeGone := errors.Is(herr, os.ErrNotExist)
	noJournal := errors.Is(perr, os.ErrNotExist)
	checked, err := workflow.Check(ctx, workflow.InstallDefinition(), Steps(env))
	switch {
	case err != nil && workflow.IsUnchanged(err):
		return nil, refusalOf(err)
	case err == nil && checked.Satisfied && takeover == nil && (noJournal || (perr == nil && prev.Condition == workflow.Complete)):
		// An unfinished or unreadable journal is the engine's to judge.
		summaryStep{d: env, unchanged: true}.Run(ctx, nil)
		if noJournal {
			prev = &workflow.Report{Journal: path, Workflow: "install", State: workflow.InstallInstalled, Condition: workflow.Complete}
		}
		prev.Run = workflow.RunConverged
		return prev, nil
	}
	safefile.Pausepoint("install-steps-checked")
	env.checks, env.checksErr = nil, nil
	env.Locked = true
	// From here on the command changes the host: a failure names what this
	// run changed before it (CONTRACT §10, "Nothing was changed.").
	var changed []string
	after := func(err error) error {
		next := nextInstall(err, ShortRerun(c.Host, o.InstallationID))
		if len(changed) == 0 && workflow.NoSpace(err, "") != "" {
			return workflow.Advise(err, next)
		}
		return workflow.AfterChanges(err, changed, next)
	}
	dir := c.Host.JournalDir(o.InstallationID)
	dirExisted, _ := safefile.Exists(dir)
	if err := safefile.MkdirAll(dir, 0o700); err != nil {
		return nil, after(fmt.Errorf("create %s: %w", dir, err))
	}
	if !dirExisted {
		changed = append(changed, fmt.Sprintf("the directory %s (created)", dir))
	}
	if takeover != nil {
		// The first change of the node's own: root's bookkeeping takes over
		// what the platform's installer made, then account.json goes.
		phase("Take over the node from the platform's installer")
		fmt.Fprintf(c.outOrDiscard(), "take over the node the platform's installer made: record %s in the bookkeeping, then remove it\n", hostrecord.PlatformAccountPath(c.Host))
		took, err := takeover.Commit()
		changed = append(changed, took...)
		if err != nil {
			return nil, after(err)
		}
	}
	kept, err := keepFinished(path)
	if err != nil {
		return nil, after(err)
	}
	if kept {
		changed = append(changed, fmt.Sprintf("the journal of the finished run (%s kept aside as a receipt)", path))
	}
	if homeGone && perr == nil && prev.Condition != workflow.Complete && prev.Policy != workflow.Inspect.String() {
		// Start over: the steps before the node's are checked again and
		// kept, the home made again and the node's steps run again.
		if err := journal.KeepAside(path); err != nil {
			return nil, after(err)
		}
		changed = append(changed, fmt.Sprintf("the journal of the run before the home %s went (%s kept aside as a receipt)", c.Host.Home(), path))
	}
	// A run that continues an interrupted one says so once, before the
	// first step it runs; its steps are printed under their own phases,
	// and a phase the interrupted run finished is not printed again.
	resuming, _ := workflow.InspectJournal(path, workflow.Lookup)
	if resuming != nil && (resuming.Condition == workflow.Complete || len(resuming.Completed) == 0) {
		resuming = nil
	}
	phases := statePhases(workflow.InstallDefinition())
	r := &workflow.Runner{
		Def: workflow.InstallDefinition(), Steps: LockGuarded(Steps(env), lock.Verify), Journal: path,
		Binding: workflow.Binding{Version: c.Version, InstallationID: o.InstallationID.String(), Generation: conf.Generation,
			SpecificationDigest: conf.SpecificationDigest},
		Observe: func(p workflow.Progress) {
			if p.Phase != workflow.PhaseBegin && p.Phase != workflow.PhaseResumed && p.Phase != workflow.PhaseVerified {
				return
			}
			if resuming != nil {
				fmt.Fprintf(c.outOrDiscard(), "\nResuming the interrupted installation at %s (%s): its %d steps before are done.\n",
					p.Step, orPhase(phases[p.State]), len(resuming.Completed))
				resuming = nil
			}
			if label := phases[p.State]; label != "" {
				phase(label)
			}
		},
	}
	rep, err = r.Run(ctx)
	changed = append(changed, runChanges(err)...)
	var be *workflow.BindingError
	if errors.As(err, &be) {
		// The journal is of another run (another installer version or
		// another specification): keep it as a receipt and start over.
		// Unregistered state is disposable and registered state is checked
		// by every step, so starting over guesses at nothing; except a run
		// that stopped in an Inspect step, which only an operator may judge.
		if old, ierr := workflow.InspectJournal(path, workflow.Lookup); ierr == nil && old.Condition != workflow.Complete && old.Policy == workflow.Inspect.String() {
			return nil, after(workflow.Refuse(inspectRefusal(path, old, c.Version)))
		}
		if kerr := journal.KeepAside(path); kerr != nil {
			return nil, after(errors.Join(err, kerr))
		}
		changed = append(changed, fmt.Sprintf("the journal of another run (%s kept aside as a receipt)", path))
		rep, err = r.Run(ctx)
		changed = append(changed, runChanges(err)...)
	}
	var re *workflow.RefusedError
	if errors.As(err, &re) {
		// The engine refuses before its first write.
		return rep, after(workflow.Refuse(err))
	}
	if asaccount.Unregistered(err) {
		// Core refused the registration for good (its public URL
		// changed): the node never registered. Root's records of it go
		// with the node root's unregistered state (CONTRACT §10), so the
		// new command Web generates installs; the account and its groups
		// stay recorded.
		if derr := discardRecords(c.Host, o.InstallationID, path); derr != nil {
			err = errors.Join(err, derr)
		} else {
			changed = append(changed, fmt.Sprintf("root's records of the installation (%s kept aside, the host record and the bookkeeping entry removed)", path))
		}
		return rep, workflow.AfterChanges(err, changed, "") // the failure names the new command
	}
	return rep, after(err)
}

// runChanges is what the engine's run changed before it failed, as the
// operator reads it (none when it changed nothing or succeeded).
func runChanges(err error) []string {
	var re *workflow.RunError
	if errors.As(err, &re) {
		return re.Changes()
	}
	return nil
}

// nextInstall is the next command after a failure that came after a
// change: the rerun continues from where the run stopped, once what a
// refusal names is dealt with.
// short, when not "", is the rerun command root's records make enough.
func nextInstall(err error, short string) string {
	again := "the same command"
	if short != "" {
		again = "`" + short + "`"
	}
	if full := workflow.NoSpace(err, layout.Default.Home()); full != "" {
		return full + " rerun " + again + " to continue the installation."
	}
	var r *workflow.Refusal
	if errors.As(err, &r) {
		return "Once that is dealt with, rerun " + again + " to continue the installation."
	}
	return "Rerun " + again + " to continue the installation."
}

// refusalOf is a refusal before the first change as a workflow.Refusal.
func refusalOf(err error) error { return workflow.Refuse(err) }

// outOrDiscard is the operator's output.
func (c Command) outOrDiscard() io.Writer {
	if c.Out == nil {
		return io.Discard
	}
	return c.Out
}

// Steps binds every state of the install workflow: root's steps to d and
// the service-account steps to serviceSteps(d).
func Steps(d Data) map[workflow.State]workflow.Step {
	out := serviceSteps(d)
	root := map[workflow.State]workflow.Step{
		workflow.InstallPreflight:         preflightStep{d},
		workflow.InstallReadToken:         readTokenStep{d},
		workflow.InstallReadConfiguration: readConfigurationStep{d},
		workflow.InstallHostLock:          hostLockStep{d},
		workflow.InstallAccount:           accountStep{d},
		workflow.InstallGroup:             groupStep{d},
		workflow.InstallHostRecords:       hostRecordsStep{d},
		workflow.InstallEnvFile:           envFileStep{d},
		workflow.InstallUnit:              unitStep{d},
		workflow.InstallStart:             startStep{d},
		workflow.InstallSummary:           summaryStep{d: d},
	}
	maps.Copy(out, root)
	out[workflow.InstallNetwork] = networkRecordStep{serviceStep: out[workflow.InstallNetwork].(serviceStep), d: d}
	return out
}

// serviceSteps binds every state of the install workflow that runs as the
// service account (workflow.ServiceAccount in its definition) to a
// serviceStep of d, which runs the state's step of nodeSteps in the child
// (Server).
func serviceSteps(d asaccount.Data) map[workflow.State]workflow.Step {
	def := workflow.InstallDefinition()
	out := map[workflow.State]workflow.Step{}
	for _, st := range def.AccountStates(workflow.ServiceAccount) {
		out[st] = serviceStep{asaccount.Step{Workflow: def.Name, State: st, D: d}}
	}
	return out
}

// nodeSteps binds the install workflow's service-account states to e.
// They run in the run's one privilege-separated child as the service
// account (asaccount.Children; Server and RunStep look each step up here);
// the other states are root's (Steps).
func nodeSteps(e *NodeEnv) map[workflow.State]workflow.Step {
	return map[workflow.State]workflow.Step{
		workflow.InstallNodeRoot:       nodeRootStep{e},
		workflow.InstallMetadata:       metadataStep{e},
		workflow.InstallDownloads:      downloadsStep{e},
		workflow.InstallHelper:         helperStep{e},
		workflow.InstallLease:          leaseStep{e},
		workflow.InstallRuntime:        runtimeStep{e},
		workflow.InstallNetwork:        networkStep{e},
		workflow.InstallProviderConfig: providerConfigStep{e},
		workflow.InstallRegister:       registerStep{e},
		workflow.InstallWaitReady:      waitReadyStep{e},
	}
}

// childFreeAccounts ends the run's own service-account child before the
// account is deleted: userdel refuses an account that a process runs as,
// and the run's checks ran in that child as the account (a half-made
// account the account step deletes to make it anew). A later call starts
// a child again, as the account then is.
type childFreeAccounts struct {
	accounts.Adapter
	end func() error
}

func (a childFreeAccounts) DeleteServiceAccount(ctx context.Context) error {
	if err := a.end(); err != nil {
		return fmt.Errorf("end the service-account child before userdel: %w", err)
	}
	return a.Adapter.DeleteServiceAccount(ctx)
}
