package install

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/hostrecord"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// HostLockWait bounds the wait for another installation or uninstallation
// on this host (CONTRACT §3.4).
var HostLockWait = 600 * time.Second

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
	Proxy    privsep.ProxyEnv
	// Version is the binary's version, bound into the journal.
	Version string
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

// JournalPath is root's install journal of an installation.
func JournalPath(h layout.Host, id string) string {
	return filepath.Join(h.JournalDir(id), "install.journal")
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
// differs). A refusal before the first change
// is a workflow.Refusal (the command prints "Nothing was changed."); a
// failure after it is a *workflow.Changed naming what this run changed.
func Run(ctx context.Context, c Command) (*workflow.Report, error) {
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
	if c.EndChild != nil {
		// Before the lock goes: no process of the account's outlives the run.
		defer c.EndChild()
	}
	safefile.Pausepoint("install-host-locked")
	if err := CheckBookkeeping(c.Host, o.InstallationID); err != nil {
		return nil, err
	}
	if err := CheckAccount(c.Host, o.InstallationID); err != nil {
		return nil, err
	}
	known, err := knownNode(c.Host, o.InstallationID)
	if err != nil {
		return nil, err
	}
	if known {
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
		in := (&Env{Opts: o}).nodeInput()
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
	pf := &Preflight{Host: c.Host, InstallationID: o.InstallationID, Provider: conf.Provider, NewNode: !known,
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
	env := &Env{Opts: o, HostPaths: c.Host, Conf: conf, ConfRaw: raw, Tok: c.Token, Adapter: c.Accounts,
		DBs: accounts.Under(c.Host.Root), Manager: c.Systemd, ProxyEnv: c.Proxy, Runner: c.Child, Out: c.Out, Style: c.Style}
	if prechecked != nil {
		env.setNodeChecks(prechecked.Checks)
	}
	path := JournalPath(c.Host, o.InstallationID)
	// Every step checks, read-only, whether its effect is already on the
	// host: a refusal anywhere comes before the first change, and a host
	// where every step is satisfied is left exactly as it is (no journal,
	// receipt, bookkeeping transaction or lock file).
	prev, perr := workflow.InspectJournal(path, workflow.Lookup)
	noJournal := errors.Is(perr, os.ErrNotExist)
	checked, err := workflow.Check(ctx, workflow.InstallDefinition(), Steps(env))
	switch {
	case err != nil && workflow.IsUnchanged(err):
		return nil, refusalOf(err)
	case err == nil && checked.Satisfied && (noJournal || (perr == nil && prev.Condition == workflow.Complete)):
		// An unfinished or unreadable journal is the engine's to judge.
		summaryStep{d: env, unchanged: true}.Run(ctx, nil)
		if noJournal {
			prev = &workflow.Report{Journal: path, Workflow: "install", State: workflow.InstallInstalled, Condition: workflow.Complete}
		}
		return prev, nil
	}
	safefile.Pausepoint("install-steps-checked")
	env.checks, env.checksErr = nil, nil
	env.Locked = true
	// From here on the command changes the host: a failure names what this
	// run changed before it (CONTRACT §10, "Nothing was changed.").
	var changed []string
	after := func(err error) error { return workflow.AfterChanges(err, changed, nextInstall(err)) }
	dir := c.Host.JournalDir(o.InstallationID)
	dirExisted, _ := safefile.Exists(dir)
	if err := safefile.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if !dirExisted {
		changed = append(changed, fmt.Sprintf("the directory %s (created)", dir))
	}
	kept, err := keepFinished(path)
	if err != nil {
		return nil, after(err)
	}
	if kept {
		changed = append(changed, fmt.Sprintf("the journal of the finished run (%s kept aside as a receipt)", path))
	}
	r := &workflow.Runner{
		Def: workflow.InstallDefinition(), Steps: Steps(env), Journal: path,
		Binding: workflow.Binding{Version: c.Version, InstallationID: o.InstallationID, Generation: conf.Generation,
			SpecificationDigest: conf.SpecificationDigest},
		Observe: func(p workflow.Progress) {
			if label, ok := phaseOf[p.State]; ok && (p.Phase == workflow.PhaseBegin || p.Phase == workflow.PhaseResumed || p.Phase == workflow.PhaseVerified) {
				phase(label)
			}
		},
	}
	rep, err := r.Run(ctx)
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
func nextInstall(err error) string {
	var r *workflow.Refusal
	if errors.As(err, &r) {
		return "Once that is dealt with, rerun the same command to continue the installation."
	}
	return "Rerun the same command to continue the installation."
}

// refusalOf is a refusal before the first change as a workflow.Refusal.
func refusalOf(err error) error { return workflow.Refuse(err) }

// discardRecords removes root's records of an installation that never
// registered: its host record, its bookkeeping entry, and its journal,
// kept aside as a receipt so that the next run starts anew.
func discardRecords(h layout.Host, id, journalPath string) error {
	// The journal first: cut off after it, the records left make the new
	// command refuse, naming the uninstall, rather than resume a journal
	// whose host_records step is done while its record is gone.
	if err := journal.KeepAside(journalPath); err != nil {
		return err
	}
	db, err := bookkeeping.Open(h.Bookkeeping())
	if err != nil {
		return err
	}
	defer db.Close()
	files, err := db.Files(id)
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Kind != bookkeeping.FileRecord {
			continue
		}
		if err := safefile.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", f.Path, err)
		}
		if err := db.RemoveFile(f.Path); err != nil {
			return err
		}
	}
	if err := db.DeleteInstallation(id); err != nil && !errors.Is(err, bookkeeping.ErrNotFound) {
		return err
	}
	return nil
}

// inspectRefusal refuses to start over from a journal of another
// installer that stopped in an Inspect state, naming it as status does.
func inspectRefusal(path string, old *workflow.Report, version string) error {
	by := "another installer"
	if old.Binding != nil && old.Binding.Version != "" {
		by = "oac-node-install " + old.Binding.Version
	}
	step := string(old.State)
	if old.Pending != nil {
		step = old.Pending.Step
	}
	note := "it leaves a state only an operator may judge"
	if old.Note != "" {
		note = old.Note
	}
	return fmt.Errorf("the installation's journal %s, written by %s, stopped in step %q (%s); this installer (%s) does not start over from it. Inspect it with `oac-node-install status` and `oac-node-install leases`",
		path, by, step, note, version)
}

// outOrDiscard is the operator's output.
func (c Command) outOrDiscard() io.Writer {
	if c.Out == nil {
		return io.Discard
	}
	return c.Out
}

// CheckToken refuses an enrollment token that cannot be one by
// ident.CheckToken, saying which rule it breaks (never the token).
func CheckToken(tok string) error {
	if err := ident.CheckToken(tok); err != nil {
		return fmt.Errorf("standard input: %w; run the command Web generated", err)
	}
	return nil
}

// checkRecordMissing refuses an installation the bookkeeping records while
// its host record is gone, unless an unfinished run of the install journal
// explains it (the host records step writes the bookkeeping entry first):
// the two records disagree, and neither is taken for the truth.
func checkRecordMissing(h layout.Host, id string) error {
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, gerr := db.GetInstallation(id)
	db.Close()
	if errors.Is(gerr, bookkeeping.ErrNotFound) {
		return nil
	}
	if gerr != nil {
		return gerr
	}
	if rep, err := workflow.InspectJournal(JournalPath(h, id), workflow.Lookup); err == nil && rep.Condition != workflow.Complete {
		return nil // the run the engine resumes writes the record
	}
	return fmt.Errorf("the installer's bookkeeping %s records installation %s, but its host record %s is missing; restore the record from a backup of /etc, or remove the node in Web and run `sudo oac-node-install --uninstall --installation-id %s --force`",
		h.Bookkeeping(), id, h.Record(id), id)
}

// knownNode reports whether the host records this installation.
func knownNode(h layout.Host, id string) (bool, error) {
	return safefile.Exists(h.Record(id))
}

// HostLock takes /run/oac-node.lock, waiting at most HostLockWait and
// saying once through phase (when set) that it waits for another
// installation or uninstallation. Having waited in vain, it refuses
// (workflow.Refusal).
func HostLock(ctx context.Context, h layout.Host, phase func(string)) (*safefile.FileLock, error) {
	if err := os.MkdirAll(filepath.Dir(h.HostLock()), 0o755); err != nil {
		return nil, err
	}
	l, err := safefile.TryLock(h.HostLock(), 0o600)
	if err == nil || !errors.Is(err, safefile.ErrLocked) {
		return l, err
	}
	if phase != nil {
		phase("Wait for another node installation or uninstallation on this host")
	}
	wctx, cancel := context.WithTimeout(ctx, HostLockWait)
	defer cancel()
	l, err = safefile.LockContext(wctx, h.HostLock(), 0o600)
	if err != nil {
		return nil, workflow.Refusef("another node installation on this host holds %s: %w", h.HostLock(), err)
	}
	return l, nil
}

// keepFinished moves a journal whose run ended aside, so the rerun starts
// a new run; kept says it did.
func keepFinished(path string) (kept bool, err error) {
	rep, err := workflow.InspectJournal(path, workflow.Lookup)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil || rep.Condition != workflow.Complete {
		return false, nil // the engine decides about it
	}
	if err := journal.KeepAside(path); err != nil {
		return false, err
	}
	return true, nil
}

// hostCapacity is the host's CPUs and memory (MiB) from the kernel.
func hostCapacity() (int, int64) {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0, 0
	}
	var set unix.CPUSet
	cpus := 0
	if unix.SchedGetaffinity(0, &set) == nil {
		cpus = set.Count()
	}
	return cpus, int64(si.Totalram) * int64(si.Unit) >> 20
}

// CheckHostRecord refuses a command whose Core address, insecure-origin
// policy or Core CA differ from what the host recorded for the
// installation (/etc/oac-node/<id>.json, root's).
func CheckHostRecord(h layout.Host, o Options) error {
	rec, err := readHostRecord(h, o.InstallationID)
	if err != nil {
		return err
	}
	if rec.InstallationID != o.InstallationID {
		return fmt.Errorf("the host record %s names installation %q, not %s; it was not written by this installer for this node: remove it or restore it", h.Record(o.InstallationID), rec.InstallationID, o.InstallationID)
	}
	// The bookkeeping is authoritative; a record that disagrees with it
	// is refused (CONTRACT §10).
	db, err := bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrPermission) {
		// The check command without root cannot read the bookkeeping
		// (0600); install runs as root.
		return checkHostRecordCommand(rec, o)
	}
	if err != nil {
		return fmt.Errorf("the host record %s exists but the installer's bookkeeping %s cannot be read (%v); uninstall the node and add it again", h.Record(o.InstallationID), h.Bookkeeping(), err)
	}
	inst, err := db.GetInstallation(o.InstallationID)
	db.Close()
	if err != nil {
		return fmt.Errorf("the host record %s exists but the installer's bookkeeping %s has no entry for it (%v); uninstall the node and add it again", h.Record(o.InstallationID), h.Bookkeeping(), err)
	}
	for _, d := range []struct {
		name     string
		rec, inv any
	}{
		{"provider", rec.Provider, inst.Provider}, {"core_url", rec.CoreURL, inst.CoreURL}, {"node_root", rec.NodeRoot, inst.NodeRoot},
		{"unit", rec.Unit, inst.Unit}, {"allow_insecure_origin", rec.AllowInsecureOrigin, inst.AllowInsecureOrigin},
		{"core_ca_sha256", rec.CoreCASHA256, inst.CoreCA},
	} {
		if d.rec != d.inv {
			return fmt.Errorf("the host record %s and the installer's bookkeeping %s disagree about %s; the bookkeeping is authoritative: restore the record or uninstall the node and add it again", h.Record(o.InstallationID), h.Bookkeeping(), d.name)
		}
	}
	return checkHostRecordCommand(rec, o)
}

// checkHostRecordCommand compares the command with the host record.
func checkHostRecordCommand(rec hostrecord.Record, o Options) error {
	ca := ""
	if len(o.CoreCA) > 0 {
		ca = sha256Hex(o.CoreCA)
	}
	switch {
	case rec.CoreURL != o.CoreURL:
		return fmt.Errorf("this host's node uses %s, but this command uses %s; remove the node and add it again to move it to another Core", rec.CoreURL, o.CoreURL)
	case rec.AllowInsecureOrigin && !o.AllowInsecureOrigin:
		return fmt.Errorf("this host's node was installed with --allow-insecure-origin and this command lacks it; rerun it with --allow-insecure-origin")
	case !rec.AllowInsecureOrigin && o.AllowInsecureOrigin:
		return fmt.Errorf("this host's node was installed without --allow-insecure-origin; rerun the command without it")
	case rec.CoreCASHA256 == ca:
		return nil
	case ca == "":
		return fmt.Errorf("this host's node was installed with --core-ca (a CA bundle with sha256 %s) and this command has none: rerun it with --core-ca and the same file; the node keeps a copy at %s",
			rec.CoreCASHA256, nodeCACopy(rec))
	case rec.CoreCASHA256 == "":
		return fmt.Errorf("this host's node was installed without --core-ca (Core's certificate is checked against the system's roots); rerun the command without --core-ca")
	}
	return fmt.Errorf("this host's node was installed with another Core CA (sha256 %s; this command's --core-ca file has sha256 %s): rerun it with the same file; the node keeps a copy at %s",
		rec.CoreCASHA256, ca, nodeCACopy(rec))
}

// nodeCACopy is where the node keeps its copy of the Core CA it was
// installed with: the operator may pass it as --core-ca, whose sha256 is
// then checked against the host record like any other file.
func nodeCACopy(rec hostrecord.Record) string {
	root := rec.NodeRoot
	if root == "" {
		root = layout.Default.NodeRoot(rec.InstallationID)
	}
	return layout.Node{Root: root}.CoreCA()
}

// readHostRecord reads the host record of installation id (root's).
func readHostRecord(h layout.Host, id string) (hostrecord.Record, error) {
	rec, err := hostrecord.Read(h, id)
	if err != nil && !errors.Is(err, hostrecord.ErrInvalid) {
		return rec, fmt.Errorf("read the host record: %w", err)
	}
	return rec, err
}
