package generation

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/workflow"
)

// nativeStep removes the generation's native image where that is the
// node's to do. Docker images belong to the host's shared daemon and are
// never removed or pruned. A microsandbox image is removed from the
// installation's store only when no other retained configuration uses the
// same store and image, the generation's import may have started (a plan
// with import_started false proves nothing was imported), the store is
// provably this installation's, the store has no sandbox when no other
// generation shares it, and a complete inventory lists the image; a second
// complete inventory must then no longer list it. Any failure keeps every
// byte (ErrNativeKept) and native_complete stays false. Its policy is
// Verify: after an interruption, a complete inventory says whether the
// image is gone.
type nativeStep struct{ d noderoot.Data }

func (s nativeStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	if facts[factDropped] == "true" {
		return workflow.Result{}, nil
	}
	n, err := s.native(ctx)
	if err != nil || n == nil {
		return workflow.Result{}, err
	}
	if err := n.removable(ctx); err != nil {
		return workflow.Result{}, err
	}
	inv, err := n.cli.ListImages(ctx)
	if err != nil {
		return workflow.Result{}, kept(err)
	}
	removed, err := n.cli.RemoveImage(ctx, inv, n.ref)
	if err != nil {
		return workflow.Result{}, kept(err)
	}
	safefile.Failpoint("native-after-remove")
	if removed {
		s.d.Logf("removed %s from %s", n.ref, n.store)
	}
	return workflow.Result{}, nil
}

// Verify: a persisted native_complete, or nothing native to remove, is
// done; otherwise a complete inventory that no longer lists the image is
// done, one that lists it is not done, and a failed inventory is unknown.
func (s nativeStep) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	if facts[factDropped] == "true" {
		return workflow.Done, workflow.Result{}, nil
	}
	n, err := s.native(ctx)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	if n == nil {
		return workflow.Done, workflow.Result{}, nil
	}
	if err := n.removable(ctx); err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	inv, err := n.cli.ListImages(ctx)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, kept(err)
	}
	if inv.Contains(n.ref) {
		return workflow.NotDone, workflow.Result{}, nil
	}
	return workflow.Done, workflow.Result{}, nil
}

// nativeTarget is a microsandbox image collection may remove.
type nativeTarget struct {
	d      noderoot.Data
	cli    noderoot.Microsandbox
	ref    microsandbox.Reference
	store  string
	shared bool // another retained generation uses the store (with another image)
	msb    string
	fw     string
}

func kept(err error) error { return fmt.Errorf("%w: %w", ErrNativeKept, err) }

// native returns the image to remove, or nil when there is nothing native
// to remove (Docker, nothing imported, a shared image, already complete).
func (s nativeStep) native(ctx context.Context) (*nativeTarget, error) {
	d := s.d
	id := d.Identity()
	col, err := lease.ReadCollecting(d.Node().Generations(), id.Generation, d.UID())
	if err != nil {
		return nil, err
	}
	if col.Identity != id {
		return nil, fmt.Errorf("%w: the collection journal is for %s", noderoot.ErrSpecification, col.Identity)
	}
	if col.NativeComplete {
		return nil, nil
	}
	gc, err := collectTarget(d)
	if err != nil || gc == nil {
		return nil, err
	}
	c := gc.Config
	if c.Docker != nil {
		return nil, nil // the host's shared daemon: never removed
	}
	if !gc.ImportStarted {
		d.Logf("generation %d was never imported: nothing native to remove", id.Generation)
		return nil, nil
	}
	others, err := noderoot.RetainedConfigs(d, id.Generation)
	if err != nil {
		return nil, kept(err)
	}
	m := c.Microsandbox
	n := &nativeTarget{d: d, store: m.RuntimeHome, msb: m.RuntimePath, fw: m.FirmwarePath}
	for _, o := range others {
		if om := o.Config.Microsandbox; om != nil && om.RuntimeHome == m.RuntimeHome {
			if om.Image == m.Image {
				d.Logf("the image %s stays: %s (generation %d) uses it", m.Image, o.Where, o.Generation)
				return nil, nil
			}
			n.shared = true
		}
	}
	if n.cli, n.ref, err = noderoot.MicrosandboxFor(d, c); err != nil {
		return nil, kept(err)
	}
	return n, nil
}

// removable checks what must hold before msb may be asked anything: the
// generation's native runtime files are present (missing files never prove
// native absence), the store is this installation's, and, unless another
// generation shares the store, it runs no sandbox.
func (n *nativeTarget) removable(ctx context.Context) error {
	d := n.d
	for _, p := range []string{n.msb, n.fw} {
		rel, err := filepath.Rel(d.Node().Root, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return kept(fmt.Errorf("%s is outside the node root", p))
		}
		f, err := d.Root().OpenFile(rel, safefile.Expect{UID: d.UID()})
		if err != nil {
			return kept(fmt.Errorf("the native runtime file %s: %w; the generation stays retained", p, err))
		}
		f.Close()
	}
	if err := microsandbox.CheckStoreOwner(n.store, d.Identity().InstallationID, d.UID()); err != nil {
		return kept(err)
	}
	if !n.shared {
		count, err := n.cli.Sandboxes(ctx)
		if err != nil {
			return kept(err)
		}
		if count > 0 {
			return kept(fmt.Errorf("the store %s still has %d sandboxes", n.store, count))
		}
	}
	return nil
}
