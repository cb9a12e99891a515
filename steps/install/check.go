package install

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/systemd"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Every step of the install workflow is a workflow.Checker: before a run
// writes anything, install.Run asks each whether its effect is already on
// the host. A check reads only: the bookkeeping read-only, files, the
// accounts, systemd's unit state and, in one service-account child, the
// node's files, the engine and Core.

var (
	done    = workflow.Done
	notDone = workflow.NotDone
)

// readBookkeeping opens the bookkeeping read-only; ok is false when it
// does not exist yet.
func readBookkeeping(h layout.Host) (db *bookkeeping.DB, ok bool, err error) {
	db, err = bookkeeping.OpenReadOnly(h.Bookkeeping())
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return db, true, nil
}

// recordsFile reports whether the bookkeeping lists path for id.
func recordsFile(db *bookkeeping.DB, id, path string) bool {
	files, err := db.Files(id)
	if err != nil {
		return false
	}
	for _, f := range files {
		if f.Path == path {
			return true
		}
	}
	return false
}

func (s preflightStep) Check(ctx context.Context, f workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.Run(ctx, f)
	return done, res, err
}

func (s readTokenStep) Check(ctx context.Context, f workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.Run(ctx, f)
	return done, res, err
}

func (s readConfigurationStep) Check(ctx context.Context, f workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	res, err := s.Run(ctx, f)
	return done, res, err
}

// Check: a check needs no lock (it changes nothing).
func (s hostLockStep) Check(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return done, workflow.Result{}, nil
}

func (s summaryStep) Check(context.Context, workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	return done, workflow.Result{}, nil
}

// Check refuses an account that is not the recorded one and applies the
// adoption rules as Run does (an account or home that cannot be adopted
// refuses); done when the account exists, the bookkeeping says who made
// it and its home is 0700 and the account's.
func (s accountStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	db, ok, err := readBookkeeping(s.d.Host())
	if err != nil {
		return 0, workflow.Result{}, err
	}
	var rec bookkeeping.Account
	recorded := false
	if ok {
		rec, recorded, err = db.Account()
		db.Close()
		if err != nil {
			return 0, workflow.Result{}, err
		}
	}
	if err := checkRecorded(s.d.Databases(), rec, recorded, s.d.Options().InstallationID); err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(err)
	}
	home := s.d.Host().Home()
	facts, err := adoptionFacts(s.d.Databases(), home, rec, recorded)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	decision, err := accounts.Decide(facts)
	if err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(workflow.Refuse(err))
	}
	if decision == accounts.Create || !recorded || facts.User == nil || (rec.Created && rec.UID != facts.User.UID) {
		return notDone, workflow.Result{}, nil
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(home, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR || st.Mode&0o7777 != 0o700 ||
		int(st.Uid) != facts.User.UID || int(st.Gid) != facts.User.GID {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{Facts: map[string]string{factUID: fmt.Sprint(facts.User.UID)}}, nil
}

// Check is Verify's member test.
func (s groupStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	in, err := s.member()
	if errors.Is(err, accounts.ErrNotFound) || (err == nil && !in) {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, err
}

// expectedInstallation is the bookkeeping entry the host records step
// writes.
func expectedInstallation(d Data) bookkeeping.Installation {
	o := d.Options()
	inst := bookkeeping.Installation{
		ID: o.InstallationID, Provider: d.Configuration().Provider, CoreURL: o.CoreURL,
		NodeRoot: d.Host().NodeRoot(o.InstallationID), Unit: d.Host().Unit(o.InstallationID), EnvFile: d.Host().EnvFile(o.InstallationID),
		AllowInsecureOrigin: o.AllowInsecureOrigin,
	}
	if len(o.CoreCA) > 0 {
		inst.CoreCA = sha256Hex(o.CoreCA)
	}
	return inst
}

// Check: the bookkeeping's entry and file record, the host record's bytes
// and /run/oac-node-docker are what the step writes.
func (s hostRecordsStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	db, ok, err := readBookkeeping(d.Host())
	if err != nil || !ok {
		return notDone, workflow.Result{}, err
	}
	defer db.Close()
	got, err := db.GetInstallation(id)
	if err != nil {
		return notDone, workflow.Result{}, nil
	}
	got.Created = expectedInstallation(d).Created
	got.Registered = false // recorded by the env_file step, after register; kept by a rerun
	path := d.Host().Record(id)
	if got != expectedInstallation(d) || !recordsFile(db, id, path) {
		return notDone, workflow.Result{}, nil
	}
	want, err := HostRecord(d).Marshal()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if data, err := os.ReadFile(path); err != nil || !bytes.Equal(data, want) {
		return notDone, workflow.Result{}, nil
	}
	if fi, err := os.Lstat(d.Host().DockerConfig()); err != nil || !fi.IsDir() {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, nil
}

// Check: the env file is there with the run's proxy settings (and
// recorded), or absent when the run has none.
func (s envFileStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	path := d.Host().EnvFile(id)
	text, write, err := systemd.RenderEnvFile(d.Proxy())
	if err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(err)
	}
	if !write {
		if _, err := os.Lstat(path); errors.Is(err, os.ErrNotExist) {
			return done, workflow.Result{}, nil
		}
		return notDone, workflow.Result{}, nil
	}
	return checkWritten(d.Host(), id, path, text)
}

// checkWritten is done when the root-owned file path holds text and the
// bookkeeping records it as the installation's.
func checkWritten(h layout.Host, id, path string, text []byte) (workflow.Outcome, workflow.Result, error) {
	if old, err := os.ReadFile(path); err != nil || !bytes.Equal(old, text) {
		return notDone, workflow.Result{}, nil
	}
	db, ok, err := readBookkeeping(h)
	if err != nil || !ok {
		return notDone, workflow.Result{}, err
	}
	defer db.Close()
	if !recordsFile(db, id, path) {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, nil
}

// Check: the unit file holds the text the step writes, and is recorded.
func (s unitStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	d, id := s.d, s.d.Options().InstallationID
	text, err := s.unit().Render()
	if err != nil {
		return 0, workflow.Result{}, workflow.Unchanged(err)
	}
	return checkWritten(d.Host(), id, d.Host().Unit(id), text)
}

// Check: systemd reports the unit enabled and active.
func (s startStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	st, err := s.d.Systemd().State(ctx, (unitStep{s.d}).unit().Name())
	if err != nil || st.ActiveState != "active" || st.UnitFileState != "enabled" {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{}, nil
}

// NodeChecks implements nodeChecker: the first call asks one child to
// check every service-account step; later calls return its answer, or the
// answer of the child that read a registered node's configuration
// (setNodeChecks). That child checked before root's steps did, without
// their facts; but no check of a service-account step reads a fact of
// root's steps (each reads only what the earlier service-account steps
// reported), so its answer is the one a child asked here would give.
func (e *Env) NodeChecks(ctx context.Context, facts workflow.Facts) (map[string]NodeCheck, error) {
	if e.checks != nil || e.checksErr != nil {
		return e.checks, e.checksErr
	}
	e.setNodeChecks(nil)
	if _, err := e.DBs.LookupUser(layout.Account); errors.Is(err, accounts.ErrNotFound) {
		return e.checks, nil
	} else if err != nil {
		e.checksErr = err
		return nil, err
	}
	req, err := childRequest(StepCheck, facts, e.nodeInput())
	if err != nil {
		e.checksErr = err
		return nil, err
	}
	a, err := e.Runner(ctx, req)
	if err != nil {
		e.checksErr = asaccount.StepErr(err)
		return nil, e.checksErr
	}
	var out Output
	if err := a.DecodeOutput(&out); err != nil {
		e.checksErr = err
		return nil, err
	}
	e.setNodeChecks(out.Checks)
	return e.checks, nil
}

// setNodeChecks records a child's answer to the check of every
// service-account step.
func (e *Env) setNodeChecks(checks []NodeCheck) {
	e.checks = map[string]NodeCheck{}
	for _, c := range checks {
		e.checks[c.Step] = c
	}
}
