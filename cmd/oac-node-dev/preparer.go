package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
)

// helperExitTransfer is the helper's exit status for artifact transfer,
// checksum or provenance failures.
const helperExitTransfer = 65

// collectTimeout bounds one collection.
const collectTimeout = 2 * time.Minute

// prepareBackoff is the pause before the next preparation attempt: 1, 2,
// 5, 10 s, then doubling up to 30 min (CONTRACT §6.2).
func prepareBackoff(attempt int) time.Duration {
	steps := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second}
	if attempt < len(steps) {
		return steps[attempt]
	}
	d := 10 * time.Second << (attempt - len(steps) + 1)
	if d > 30*time.Minute || d <= 0 {
		d = 30 * time.Minute
	}
	return d
}

// generations keeps the node's view of its Runtime generations and runs
// the retained helper for them through its launcher (runHelper), one
// helper at a time, each in its own process group (killed as a group with
// SIGKILL when the node stops).
//
// The helper takes the generation's lease exclusively itself; the node
// holds a shared reference only on the generations it serves, never on the
// one a helper prepares or collects (serving.go).
type generations struct {
	ctx            context.Context
	root, helper   string // the node root and the helper launcher in it
	config         string // provider.json, the base generation's configuration
	installationID ident.InstallationID
	insecure       bool // identity.json allows an insecure origin
	base           int64
	log            io.Writer
	changed        chan struct{}

	helperMu sync.Mutex // one helper at a time

	mu      sync.Mutex
	obs     map[int64]nodeproto.Observation
	dropped map[int64]bool
	busy    map[int64]bool             // a goroutine prepares or collects it
	refs    map[int64]*lease.HelperRef // serving references (serving.go)
}

// findPreparer returns the helper launcher next to the configuration
// (layout.HelperLauncherFile), as the platform's node program looks for it:
// "" when there is none (single-generation mode), its path when it is a
// 0600 regular file (not a link), and an error for anything else there,
// which the node does not start with.
func findPreparer(configPath string) (string, error) {
	p := filepath.Join(filepath.Dir(configPath), layout.HelperLauncherFile)
	st, err := os.Lstat(p)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", err
	case !st.Mode().IsRegular() || st.Mode().Perm() != 0o600:
		return "", fmt.Errorf("the generation preparer %s must be a private regular file (0600)", p)
	}
	return p, nil
}

// newGenerations starts with the base generation ready and takes its
// serving reference.
func newGenerations(ctx context.Context, helper, config string, installationID ident.InstallationID, insecure bool, base int64, digest string, log io.Writer) *generations {
	g := &generations{
		ctx: ctx, root: filepath.Dir(helper), helper: helper, config: config, installationID: installationID, insecure: insecure, base: base, log: log,
		changed: make(chan struct{}, 1),
		obs:     map[int64]nodeproto.Observation{base: {Generation: base, SpecificationDigest: digest, State: nodeproto.StateReady}},
		dropped: map[int64]bool{}, busy: map[int64]bool{}, refs: map[int64]*lease.HelperRef{},
	}
	g.hold(base, digest)
	return g
}

func (g *generations) notify() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

// observations is what the next heartbeat reports: the newest eight.
func (g *generations) observations() []nodeproto.Observation {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := []nodeproto.Observation{}
	for _, o := range g.obs {
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b nodeproto.Observation) int { return int(b.Generation - a.Generation) })
	if len(out) > nodeproto.MaxObservations {
		out = out[:nodeproto.MaxObservations]
	}
	return out
}

func (g *generations) set(o nodeproto.Observation) {
	g.mu.Lock()
	g.obs[o.Generation] = o
	g.mu.Unlock()
	g.notify()
}

// target starts preparing Core's target generation unless it is known.
func (g *generations) target(d nodeproto.Deployment) {
	g.mu.Lock()
	o, known := g.obs[d.Generation]
	if d.Generation < 1 || g.dropped[d.Generation] || g.busy[d.Generation] || known && o.State == nodeproto.StateReady && o.SpecificationDigest == d.SpecificationDigest {
		g.mu.Unlock()
		return
	}
	g.busy[d.Generation] = true
	g.mu.Unlock()
	go g.prepare(d.Generation, d.SpecificationDigest)
}

func (g *generations) prepare(gen int64, digest string) {
	defer func() { g.mu.Lock(); delete(g.busy, gen); g.mu.Unlock() }()
	for attempt := 0; ; attempt++ {
		g.set(nodeproto.Observation{Generation: gen, SpecificationDigest: digest, State: nodeproto.StatePreparing})
		err := g.runHelper(g.ctx, "prepare", gen, digest)
		if err == nil {
			g.hold(gen, digest)
			g.set(nodeproto.Observation{Generation: gen, SpecificationDigest: digest, State: nodeproto.StateReady})
			return
		}
		if g.ctx.Err() != nil {
			return
		}
		diag := diagProviderUnavailable
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == helperExitTransfer {
			diag = diagRuntimeDownloadFailed
		}
		fmt.Fprintf(g.log, "oac-node-dev: preparing generation %d failed (%v); retrying in %s\n", gen, err, prepareBackoff(attempt))
		g.set(nodeproto.Observation{Generation: gen, SpecificationDigest: digest, State: nodeproto.StateFailed, Diagnostic: diag})
		select {
		case <-g.ctx.Done():
			return
		case <-time.After(prepareBackoff(attempt)):
		}
	}
}

// drop collects a generation Core granted, once.
func (g *generations) drop(d nodeproto.Drop) {
	g.mu.Lock()
	if g.dropped[d.Generation] || g.busy[d.Generation] {
		g.mu.Unlock()
		return
	}
	g.busy[d.Generation] = true
	g.mu.Unlock()
	go func() {
		defer func() { g.mu.Lock(); delete(g.busy, d.Generation); g.mu.Unlock() }()
		// The collector locks the lease exclusively: let go of it first.
		g.unhold(d.Generation)
		for attempt := 0; ; attempt++ {
			ctx, cancel := context.WithTimeout(g.ctx, collectTimeout)
			err := g.runHelper(ctx, "collect", d.Generation, d.SpecificationDigest)
			cancel()
			if err == nil {
				g.mu.Lock()
				delete(g.obs, d.Generation)
				g.dropped[d.Generation] = true
				g.mu.Unlock()
				g.notify()
				return
			}
			if g.ctx.Err() != nil {
				return
			}
			fmt.Fprintf(g.log, "oac-node-dev: collecting generation %d failed (%v); retrying in %s\n", d.Generation, err, prepareBackoff(attempt))
			select {
			case <-g.ctx.Done():
				return
			case <-time.After(prepareBackoff(attempt)):
			}
		}
	}()
}

// runHelper runs the retained helper for one generation action as the
// platform's node program does: python3 <node root>/generation-preparer.pyz
// with the action's arguments (and --allow-insecure-origin when the node's
// identity allows an insecure origin, as the platform's newer node program
// adds it), in its own process group (SIGKILL to the group when ctx ends),
// its output on the node's stderr. The launcher
// executes generation-preparer in the same process, so the exit status is
// the helper's.
func (g *generations) runHelper(ctx context.Context, action string, gen int64, digest string) error {
	g.helperMu.Lock()
	defer g.helperMu.Unlock()
	args := []string{g.helper, "--installation-id", g.installationID.String(), "--generation-action", action,
		"--generation", strconv.FormatInt(gen, 10), "--specification-digest", digest}
	if g.insecure {
		args = append(args, "--allow-insecure-origin")
	}
	cmd := exec.CommandContext(ctx, "python3", args...)
	cmd.Stdout, cmd.Stderr = g.log, g.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	fmt.Fprintf(g.log, "oac-node-dev: running %s\n", cmd)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s generation %d: %w", layout.HelperLauncherFile, action, gen, err)
	}
	return nil
}
