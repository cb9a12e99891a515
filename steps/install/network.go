package install

import (
	"context"
	"errors"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/workflow"
)

// DockerNetworks is the part of the Docker Engine the network step uses.
// The real docker.Client implements it.
type DockerNetworks interface {
	NetworkInspect(ctx context.Context, name string) (docker.Network, error)
	NetworkCreate(ctx context.Context, name string, labels map[string]string) (string, error)
	NetworkRemove(ctx context.Context, name string) error
}

// InstallationLabel labels what belongs to an installation on the engine.
const InstallationLabel = "io.oac.installation"

// networkStep creates the installation's Docker network oac-node-<id>,
// labelled with the installation. A microsandbox node has none. Preflight
// refused a network of that name that existed before the installation, so
// one that exists now is this installation's.
type networkStep struct{ e *NodeEnv }

func (s networkStep) networks(ctx context.Context) (DockerNetworks, string, error) {
	dk, err := s.e.Docker(ctx)
	if err != nil {
		return nil, "", err
	}
	n, ok := dk.(DockerNetworks)
	if !ok {
		return nil, "", errors.New("the Docker adapter cannot manage networks")
	}
	return n, s.e.base.Docker.Network, nil
}

func (s networkStep) Run(ctx context.Context, _ workflow.Facts) (workflow.Result, error) {
	if s.e.base.Docker == nil {
		return workflow.Result{Event: workflow.EventNetworkNotNeeded}, nil
	}
	n, name, err := s.networks(ctx)
	if err != nil {
		return workflow.Result{}, err
	}
	found, err := networkExists(ctx, n, name, s.e.in.InstallationID, s.e.in.UnlabelledNetwork)
	if err != nil {
		return workflow.Result{}, err
	}
	if !found {
		s.e.Logf("create the Docker network %s", name)
		if _, err := n.NetworkCreate(ctx, name, map[string]string{InstallationLabel: s.e.in.InstallationID.String()}); err != nil && !errors.Is(err, docker.ErrExists) {
			return workflow.Result{}, err
		}
	}
	return workflow.Result{Event: workflow.EventNetworkReady, Facts: map[string]string{factNetwork: name}}, nil
}

// Verify: the network exists (done) or not (not done).
func (s networkStep) Verify(ctx context.Context, _ workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	if s.e.base.Docker == nil {
		return workflow.Done, workflow.Result{Event: workflow.EventNetworkNotNeeded}, nil
	}
	n, name, err := s.networks(ctx)
	if err != nil {
		return workflow.Unknown, workflow.Result{}, err
	}
	found, err := networkExists(ctx, n, name, s.e.in.InstallationID, s.e.in.UnlabelledNetwork)
	switch {
	case err != nil:
		return workflow.Unknown, workflow.Result{}, err
	case !found:
		return workflow.NotDone, workflow.Result{}, nil
	}
	return workflow.Done, workflow.Result{Event: workflow.EventNetworkReady, Facts: map[string]string{factNetwork: name}}, nil
}

// networkExists reports whether the installation's network exists; one of
// that name that is not labelled for the installation is refused, except
// an unlabelled one when unlabelled is set (root's bookkeeping records it
// as the platform's installer's).
func networkExists(ctx context.Context, n DockerNetworks, name string, id ident.InstallationID, unlabelled bool) (bool, error) {
	got, err := n.NetworkInspect(ctx, name)
	if errors.Is(err, docker.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if unlabelled && got.Labels[InstallationLabel] == "" {
		return true, nil
	}
	if got.Labels[InstallationLabel] != id.String() {
		return false, noderoot.Refusal("Another node of this installation may use this Docker Engine; remove it first", fmt.Errorf("the Docker network %s exists and is not labelled %s=%s", name, InstallationLabel, id))
	}
	return true, nil
}

// Check is Verify: it only inspects the engine.
func (s networkStep) Check(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	out, res, err := s.Verify(ctx, facts)
	if out == workflow.Unknown && err == nil {
		out = notDone
	}
	return out, res, err
}

// networkRecordStep is the network state as root runs it: the service
// account's networkStep in the child, then root's record of the network in
// the bookkeeping, which status lists and uninstall removes. A run cut off
// between the two completes the record when its verification finds the
// network made; a rerun whose bookkeeping lacks the record (an
// installation of an installer that did not record it) runs the step again,
// which finds the network and records it.
type networkRecordStep struct {
	serviceStep
	d Data
}

// Run implements workflow.Step.
func (s networkRecordStep) Run(ctx context.Context, facts workflow.Facts) (workflow.Result, error) {
	res, err := s.serviceStep.Run(ctx, facts)
	if err != nil {
		return res, err
	}
	return res, s.record(res.Facts)
}

// Verify implements workflow.Verifier.
func (s networkRecordStep) Verify(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	out, res, err := s.serviceStep.Verify(ctx, facts)
	if err != nil || out != workflow.Done {
		return out, res, err
	}
	return out, res, s.record(res.Facts)
}

// Check implements workflow.Checker: done only when the bookkeeping records
// the network too.
func (s networkRecordStep) Check(ctx context.Context, facts workflow.Facts) (workflow.Outcome, workflow.Result, error) {
	out, res, err := s.serviceStep.Check(ctx, facts)
	if err != nil || out != workflow.Done || res.Facts[factNetwork] == "" {
		return out, res, err
	}
	db, err := bookkeeping.OpenReadOnly(s.d.Host().Bookkeeping())
	if err != nil {
		return 0, workflow.Result{}, err
	}
	defer db.Close()
	nets, err := db.Networks(s.d.Options().InstallationID)
	if err != nil {
		return 0, workflow.Result{}, err
	}
	for _, n := range nets {
		if n.Name == res.Facts[factNetwork] {
			return out, res, nil
		}
	}
	return notDone, workflow.Result{}, nil
}

// record records the network the step named (none for microsandbox).
func (s networkRecordStep) record(facts map[string]string) error {
	name := facts[factNetwork]
	if name == "" {
		return nil
	}
	db, err := bookkeeping.Open(s.d.Host().Bookkeeping())
	if err != nil {
		return err
	}
	defer db.Close()
	return db.AddNetwork(name, s.d.Options().InstallationID)
}
