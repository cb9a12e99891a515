package install

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// StepCheck asks the child to check, without changing anything, every
// service-account step of the installation in order (workflow.Checker):
// one child answers for all of them.
const StepCheck = "check"

// NodeCheck is one step's answer to StepCheck.
type NodeCheck struct {
	Step    string            `json:"step"`
	Outcome workflow.Outcome  `json:"outcome"`
	Event   workflow.Event    `json:"event,omitempty"`
	Facts   map[string]string `json:"facts,omitempty"`
}

// CheckNodeSteps checks the service-account steps in the install
// workflow's order, each seeing the facts the earlier ones reported. A
// node root that does not exist yet leaves every step unchecked (not
// done). It writes nothing; a refusal is returned as the step's error.
func CheckNodeSteps(ctx context.Context, in NodeOptions, req InstallStepRequest) (InstallStepResult, error) {
	if err := CheckNodeRoot(in.Home, in.InstallationID, in.UID); err != nil {
		return InstallStepResult{}, err
	}
	e, err := NewNodeEnv(ctx, in)
	if errors.Is(err, os.ErrNotExist) {
		return InstallStepResult{}, nil
	}
	if err != nil {
		return InstallStepResult{}, err
	}
	defer e.Close()
	steps := nodeSteps(e)
	facts := workflow.Facts(maps.Clone(req.Facts))
	if facts == nil {
		facts = workflow.Facts{}
	}
	var out []NodeCheck
	for _, sd := range workflow.InstallDefinition().States {
		st, ok := steps[sd.Name]
		if !ok {
			continue
		}
		c := NodeCheck{Step: string(sd.Name), Outcome: workflow.NotDone}
		if ck, ok := st.(workflow.Checker); ok {
			o, res, err := ck.Check(ctx, maps.Clone(facts))
			if err != nil {
				return InstallStepResult{}, fmt.Errorf("check %s: %w", sd.Name, err)
			}
			if o == workflow.Done {
				c.Outcome, c.Event, c.Facts = o, res.Event, res.Facts
				maps.Copy(facts, res.Facts)
			}
		}
		out = append(out, c)
	}
	return InstallStepResult{Checks: out}, nil
}

// Check: every directory of the node root is there (0700, the account's),
// no enrollment token file is left, and the Core CA copy is the command's
// (a registered node's different copy refuses).
func (s nodeRootStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	h, err := safefile.OpenRoot(e.in.Home)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	defer h.Close()
	for _, rel := range nodeRootDirs(e.in.InstallationID) {
		d, err := h.OpenDir(rel, safefile.Expect{UID: e.in.UID, Mode: 0o700})
		if errors.Is(err, os.ErrNotExist) {
			return notDone, workflow.Result{}, nil
		}
		if err != nil {
			return 0, workflow.Result{}, err
		}
		d.Close()
	}
	names, err := e.Root().ReadDir()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	for _, n := range names {
		if strings.HasPrefix(n, tokenFilePrefix) {
			return notDone, workflow.Result{}, nil
		}
	}
	ca := e.in.CoreCA
	if len(ca) == 0 {
		return done, workflow.Result{}, nil
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	old, err := e.ReadPrivate(layout.CoreCAFile, 1<<20)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return notDone, workflow.Result{}, nil
	case err != nil:
		return 0, workflow.Result{}, err
	case !bytes.Equal(old, ca) && registered:
		return 0, workflow.Result{}, noderoot.Refusal("This node was registered with another Core CA; use the CA it was installed with, or remove the node and add it again", fmt.Errorf("different Core CA: %w", safefile.ErrConflict))
	case !bytes.Equal(old, ca):
		return notDone, workflow.Result{}, nil
	case registered:
		return done, workflow.Result{}, nil
	}
	return done, workflow.Result{Facts: map[string]string{"core_ca_sha256": release.SHA256Hex(ca)}}, nil
}

// recordState compares a node record with what writeRecord would write.
func (e *NodeEnv) recordState(rel string, v map[string]any) (noderoot.FileState, error) {
	want, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return 0, err
	}
	got, err := e.ReadPrivate(rel, 1<<16)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return noderoot.FileMissing, nil
	case err != nil:
		return 0, err
	case !bytes.Equal(got, append(want, '\n')):
		return 0, fmt.Errorf("%w: %s differs from what this command computes", noderoot.ErrConflict, rel)
	}
	return noderoot.FileOK, nil
}

// Check: the three records hold what this run computes; a registered
// node's different record refuses.
func (s metadataStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	spec := e.spec
	sel, err := e.Release(ctx, spec.Runtime.SourceCommit)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if err := release.MatchRelease(spec, sel.Release.Manifest); err != nil {
		return 0, workflow.Result{}, noderoot.Artifact(err)
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	sums := map[string]any{}
	for _, f := range noderoot.ReleaseFiles(sel.Release) {
		sums[f.Rel] = f.SHA256
	}
	out := done
	for _, r := range []struct {
		rel string
		v   map[string]any
	}{
		{layout.InstallationFile, e.installationRecord()},
		{layout.PreparationFile, map[string]any{"source_url": e.source}},
		{layout.RuntimeArtifactsFile, map[string]any{"installation_id": e.in.InstallationID, "source_commit": spec.Runtime.SourceCommit, "sha256": sums}},
	} {
		st, err := e.recordState(r.rel, r.v)
		switch {
		case errors.Is(err, noderoot.ErrConflict) && registered:
			return 0, workflow.Result{}, refusalIfConflict(err)
		case errors.Is(err, noderoot.ErrConflict):
			out = notDone
		case err != nil:
			return 0, workflow.Result{}, err
		case st == noderoot.FileMissing:
			out = notDone
		}
	}
	return out, workflow.Result{Facts: map[string]string{
		factSourceCommit: spec.Runtime.SourceCommit,
		factNodeRelease:  cur.Release.Manifest.SourceCommit,
	}}, nil
}

// Check: the node program and the Runtime files are verified copies (the
// archive only when the provider does not hold the image); a registered
// node's different node program, or any other file of its that differs,
// refuses.
func (s downloadsStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	cur, err := e.CurrentRelease(ctx)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	sel, err := e.Release(ctx, e.spec.Runtime.SourceCommit)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	node := cur.Release.Manifest.Artifacts[release.PathNode]
	st, err := noderoot.CheckFile(e, release.PathNode, noderoot.RuntimeFile{Rel: release.PathNode, SHA256: node.SHA256, Size: node.Size, Filename: node.Filename})
	switch {
	case errors.Is(err, noderoot.ErrConflict) && registered:
		return 0, workflow.Result{}, noderoot.Refusal("A registered node keeps its node program: remove the node in Web, run this command with --uninstall, then add the node again with a new command", fmt.Errorf("%s differs from the current release's node program: %w", release.PathNode, err))
	case errors.Is(err, noderoot.ErrConflict):
		return notDone, workflow.Result{}, nil
	case err != nil:
		return 0, workflow.Result{}, err
	case st == noderoot.FileMissing:
		return notDone, workflow.Result{}, nil
	}
	_, warm, err := noderoot.ImageHeld(ctx, e, e.base)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	for _, f := range noderoot.ReleaseFiles(sel.Release) {
		if f.Rel == noderoot.PathUnpacked || (f.Rel == release.PathRuntimeImage && warm) {
			continue
		}
		st, err := noderoot.CheckFile(e, f.Rel, f)
		if errors.Is(err, noderoot.ErrConflict) && registered {
			// Once registered no node file is replaced (CONTRACT §10):
			// refused here, before the lock's writes, not by the run.
			return 0, workflow.Result{}, noderoot.Refusal("A registered node's files are not replaced: remove the node in Web, run this command with --uninstall, then add the node again with a new command",
				fmt.Errorf("%s differs from the release's: %w", f.Rel, err))
		}
		if errors.Is(err, noderoot.ErrConflict) || (err == nil && st == noderoot.FileMissing) {
			return notDone, workflow.Result{}, nil
		}
		if err != nil {
			return 0, workflow.Result{}, err
		}
	}
	facts := map[string]string{}
	if warm {
		facts[factWarm] = "true"
	}
	return done, workflow.Result{Facts: facts}, nil
}

// Check: the retained helper holds this installer's bytes; a registered
// node's different helper refuses. The two are compared as they are read,
// a block at a time: the helper is as large as the installer (tens of
// megabytes), and reading both whole cost a check most of its time.
func (s helperStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	if e.in.Helper == nil {
		return 0, workflow.Result{}, errors.New("no installer bytes to retain as the generation helper")
	}
	data, err := e.in.Helper()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	if len(data) > MaxHelperSize {
		return 0, workflow.Result{}, fmt.Errorf("the installer is larger than %d bytes", MaxHelperSize)
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	f, err := e.Root().OpenFile(layout.HelperFile, safefile.Expect{UID: e.UID(), Mode: 0o700, MaxSize: MaxHelperSize})
	same := false
	if err == nil {
		same, err = sameBytes(data, io.LimitReader(f, MaxHelperSize+1))
		f.Close()
	}
	switch {
	case errors.Is(err, os.ErrNotExist):
		return notDone, workflow.Result{}, nil
	case err == nil && same:
		return done, workflow.Result{}, nil
	case registered && (err == nil || errors.Is(err, safefile.ErrUnsafe)):
		return 0, workflow.Result{}, noderoot.Refusal("A registered node keeps the installer it was installed with: run the same installer version, or remove the node in Web, run --uninstall, then add it again", fmt.Errorf("the retained %s differs from this installer: %w", layout.HelperFile, safefile.ErrConflict))
	case registered:
		return 0, workflow.Result{}, err
	}
	return notDone, workflow.Result{}, nil
}

// compareBlock is how much of the file sameBytes reads at a time.
const compareBlock = 1 << 20

// sameBytes reports whether file yields exactly the installer's bytes,
// reading it a block at a time and comparing each block in place with the
// installer's mapped bytes (no copy of them).
func sameBytes(installer []byte, file io.Reader) (bool, error) {
	buf := make([]byte, compareBlock)
	off := 0
	for {
		n, err := io.ReadFull(file, buf)
		if n > len(installer)-off || !bytes.Equal(buf[:n], installer[off:off+n]) {
			return false, nil
		}
		off += n
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return off == len(installer), nil
		default:
			return false, fmt.Errorf("read the retained %s: %w", layout.HelperFile, err)
		}
	}
}

// Check: the lease and its identity exist and open (a lease that does not
// refuses, as the step does).
func (s leaseStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	ok, err := e.LeaseExists()
	if err != nil || !ok {
		return notDone, workflow.Result{}, err
	}
	l, err := lease.Open(e.Node().Generations(), e.Identity(), e.UID())
	if err != nil {
		return 0, workflow.Result{}, noderoot.Refusal("Inspect it with `oac-node-install leases`", fmt.Errorf("lease of generation %d: %w", e.Identity().Generation, err))
	}
	return done, workflow.Result{}, l.Close()
}

// Check: the provider holds the image and no unpacked copy is left.
func (s runtimeStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	id, held, err := noderoot.ImageHeld(ctx, s.e, s.e.base)
	if err != nil || !held {
		return notDone, workflow.Result{}, err
	}
	if _, err := os.Lstat(s.e.Node().Root + "/" + noderoot.PathUnpacked); err == nil {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{Facts: map[string]string{factImageID: id}}, nil
}

// Check is Verify: it only inspects the engine.
func (s networkStep) Check(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	out, res, err := s.Verify(ctx, facts)
	if out == workflow.Unknown && err == nil {
		out = notDone
	}
	return out, res, err
}

// Check: provider.json holds what the step would publish; a registered
// node's different file refuses.
func (s providerConfigStep) Check(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	c := e.base.Clone()
	if c.Docker != nil {
		if facts[factImageID] == "" {
			return notDone, workflow.Result{}, nil
		}
		c.Docker.Image = facts[factImageID]
	}
	if err := c.Validate(); err != nil {
		return 0, workflow.Result{}, err
	}
	data, err := c.Marshal()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	registered, err := e.Registered()
	if err != nil {
		return 0, workflow.Result{}, err
	}
	old, err := e.ReadPrivate(layout.ProviderConfigFile, provider.MaxSize)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return notDone, workflow.Result{}, nil
	case err == nil && bytes.Equal(old, data):
		return done, workflow.Result{}, nil
	case registered:
		return 0, workflow.Result{}, noderoot.Refusal("This node is registered with another configuration: remove it in Web, run --uninstall, then add it again with a new command", fmt.Errorf("provider.json: %w", safefile.ErrConflict))
	}
	return notDone, workflow.Result{}, nil
}

// Check: registered.json exists with installation.json's bytes; other
// bytes refuse.
func (s registerStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	// A record that is there but not a private regular file of the
	// account's (a link, a device, too large) is refused here, before the
	// workflow writes anything, not when the register step meets it.
	const hostile = "The node's registration record is not as the installer left it; inspect it"
	reg, err := e.ReadPrivate(layout.RegisteredFile, 4096)
	if errors.Is(err, os.ErrNotExist) {
		return notDone, workflow.Result{}, nil
	}
	if err != nil {
		return 0, workflow.Result{}, noderoot.Refusal(hostile, err)
	}
	inst, err := e.ReadPrivate(layout.InstallationFile, 4096)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, workflow.Result{}, noderoot.Refusal(hostile, err)
	}
	if !bytes.Equal(reg, inst) {
		return 0, workflow.Result{}, noderoot.Refusal("This node is registered for another deployment: remove it in Web, run --uninstall, then add it again with a new command", fmt.Errorf("registered.json differs from installation.json"))
	}
	// A registered node without its identity has lost its credential: it
	// can neither reach Core nor be confirmed removed.
	if _, err := os.Lstat(e.Node().Identity()); errors.Is(err, os.ErrNotExist) {
		return 0, workflow.Result{}, noderoot.Refusal("Remove the node in Web, run this command with --uninstall --force, then add the node again with a new command",
			fmt.Errorf("registered.json is there but state/node/identity.json, the node's credential, is gone"))
	} else if err != nil {
		return 0, workflow.Result{}, noderoot.Refusal(hostile, err)
	}
	return done, workflow.Result{}, nil
}

// Check reads Core's identity route once: connected and ready is done;
// anything else leaves the wait to the run.
func (s waitReadyStep) Check(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	e := s.e
	nid, err := e.NodeIdentity()
	if err != nil || nid.CoreURL != noderoot.TrimOrigin(e.in.CoreOrigin) || nid.AllowInsecureOrigin != e.in.AllowInsecureOrigin {
		return notDone, workflow.Result{}, nil
	}
	pool, err := e.CertPool()
	if err != nil {
		return notDone, workflow.Result{}, nil
	}
	c, err := noderoot.NewCoreClient(nid, pool, e.Proxy())
	if err != nil {
		return notDone, workflow.Result{}, nil
	}
	a, status, err := CoreIdentity(ctx, c)
	if err != nil || status != http.StatusOK || !a.Connected || !a.ProviderReady || a.NodeID != nid.Identity.NodeID ||
		a.InstallationID != nid.Identity.InstallationID || a.SpecificationDigest != nid.Identity.SpecificationDigest ||
		a.DeploymentGeneration != nid.Identity.DeploymentGeneration || a.Provider != nid.Identity.Provider {
		return notDone, workflow.Result{}, nil
	}
	return done, workflow.Result{Facts: map[string]string{"node_id": nid.Identity.NodeID}}, nil
}
