package uninstall

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/workflow"
)

// Facts of the uninstall's network step.
const (
	// FactRuntimeImage is the Runtime image the node used, which
	// uninstall keeps (provider.json's image).
	FactRuntimeImage = "runtime_image"
	// FactNetworkKept is "true" when labelled containers kept the network.
	FactNetworkKept = "network_kept"
)

// removeNetwork removes the installation's Docker network as the service
// account, only when no container labelled io.oac.installation=<id>
// remains; otherwise it keeps the network and prints the command that
// removes it. It also reports the Runtime image the node used, which
// uninstall never removes. A microsandbox node has no network.
func removeNetwork(ctx context.Context, in NodeOptions, req Input) (workflow.Result, error) {
	res := workflow.Result{Event: workflow.EventNetworkHandled, Facts: map[string]string{}}
	if req.Provider != release.ProviderDocker {
		return res, nil
	}
	host, name := docker.DefaultHost, docker.NetworkName(req.InstallationID)
	if c, err := readProviderConfig(in, req.InstallationID); err != nil {
		return workflow.Result{}, err
	} else if c != nil && c.Docker != nil {
		host, res.Facts[FactRuntimeImage] = c.Docker.Host, c.Docker.Image
		if c.Docker.Network != "" {
			name = c.Docker.Network
		}
	}
	if in.Docker == nil {
		return workflow.Result{}, errors.New("uninstallation: no Docker adapter")
	}
	dk, err := in.Docker(ctx, host)
	if err != nil {
		return workflow.Result{}, err
	}
	// An engine that does not run (stopped, removed) keeps no container
	// of the node running and holds its network only on its disk: the
	// rest of the node goes, and the network is left with the command
	// that removes it once the engine runs again.
	leave := func(err error) (workflow.Result, error) {
		if !errors.Is(err, docker.ErrUnavailable) {
			return workflow.Result{}, err
		}
		in.logf("leave the Docker network %s, if it is there: the Docker Engine does not run (%v); once it runs again, remove it: sudo docker network rm %s", name, err, name)
		res.Facts[workflow.FactNetworkLeft] = name
		return res, nil
	}
	got, err := dk.NetworkInspect(ctx, name)
	if errors.Is(err, docker.ErrNotFound) {
		return res, nil
	}
	if err != nil {
		return leave(err)
	}
	platforms := req.UnlabelledNetwork && name == docker.NetworkName(req.InstallationID) && got.Labels[install.InstallationLabel] == ""
	if !platforms && got.Labels[install.InstallationLabel] != req.InstallationID.String() {
		in.logf("keep the Docker network %s: it is not labelled %s=%s", name, install.InstallationLabel, req.InstallationID)
		return res, nil
	}
	left, err := dk.ContainersByLabel(ctx, install.InstallationLabel, req.InstallationID.String())
	if err != nil {
		return leave(err)
	}
	if len(left) > 0 {
		in.logf("keep the Docker network %s: %d containers labelled %s=%s remain; remove it later with `sudo docker network rm %s`",
			name, len(left), install.InstallationLabel, req.InstallationID, name)
		res.Facts[FactNetworkKept] = "true"
		return res, nil
	}
	in.logf("remove the Docker network %s", name)
	if err := dk.NetworkRemove(ctx, name); errors.Is(err, docker.ErrUnavailable) {
		return leave(err)
	} else if err != nil && !errors.Is(err, docker.ErrNotFound) {
		return workflow.Result{}, fmt.Errorf("remove the Docker network %s: %w", name, err)
	}
	return res, nil
}

// readProviderConfig reads the node's provider.json without following a
// link; nil when the node root or the file is gone. A node root or file
// that is not what the node writes (a link, a FIFO, another owner's, too
// large, not a valid configuration) is ignored, saying so: the default
// host and network name are used, and the network is removed only when
// labelled for the installation, so the account's files cannot keep the
// uninstallation from completing.
func readProviderConfig(in NodeOptions, id ident.InstallationID) (*provider.Config, error) {
	ignore := func(err error) (*provider.Config, error) {
		in.logf("ignore the node's provider.json (%v); use the default Docker host and network name", err)
		return nil, nil
	}
	root, err := in.openNodeRoot(id)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.Is(err, safefile.ErrUnsafe):
		return ignore(err)
	case err != nil:
		return nil, err
	}
	defer root.Close()
	data, err := root.ReadFile(layout.ProviderConfigFile, safefile.Expect{UID: in.UID, MaxSize: core.MaxConfigurationSize})
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case errors.Is(err, safefile.ErrUnsafe):
		return ignore(err)
	case err != nil:
		return nil, err
	}
	c, err := provider.Parse(data)
	if err != nil {
		return ignore(fmt.Errorf("%s: %w", root.Join(layout.ProviderConfigFile), err))
	}
	return c, nil
}
