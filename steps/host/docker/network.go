package docker

import (
	"context"
	"fmt"
	"strings"

	"github.com/moby/moby/client"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// NetworkName is the name of the node's Docker network for an installation.
func NetworkName(installationID ident.InstallationID) string {
	return "oac-node-" + string(installationID)
}

// Network is what the installer reads of a Docker network.
type Network struct {
	ID     string
	Name   string
	Driver string
	Labels map[string]string
}

// NetworkInspect returns the network named name. A network whose name is
// not exactly name (the engine also matches ID prefixes) or no network is
// an error wrapping ErrNotFound.
func (c *Client) NetworkInspect(ctx context.Context, name string) (Network, error) {
	var res client.NetworkInspectResult
	op := "inspect network " + name
	err := c.call(ctx, op, func(ctx context.Context) (err error) {
		res, err = c.api.NetworkInspect(ctx, name, client.NetworkInspectOptions{})
		return err
	})
	if err != nil {
		return Network{}, err
	}
	n := res.Network
	if n.Name != name {
		return Network{}, fmt.Errorf("%s: %w (the engine answered with network %q)", op, ErrNotFound, n.Name)
	}
	return Network{ID: n.ID, Name: n.Name, Driver: n.Driver, Labels: n.Labels}, nil
}

// NetworkCreate creates a bridge network named name with labels and
// returns its ID. If a network of that name exists, it creates nothing and
// returns an error wrapping ErrExists. (Engines before API 1.44 create a
// duplicate name with a warning unless asked not to; such a duplicate is
// removed again at once, by its ID.)
func (c *Client) NetworkCreate(ctx context.Context, name string, labels map[string]string) (string, error) {
	var res client.NetworkCreateResult
	op := "create network " + name
	err := c.call(ctx, op, func(ctx context.Context) (err error) {
		res, err = c.api.NetworkCreate(ctx, name, client.NetworkCreateOptions{Driver: "bridge", Labels: labels})
		return err
	})
	if err != nil {
		return "", err
	}
	for _, w := range res.Warning {
		if strings.Contains(w, "already exists") {
			rerr := c.NetworkRemove(ctx, res.ID)
			if rerr != nil {
				return "", fmt.Errorf("%s: %w; removing the duplicate %s failed: %v", op, ErrExists, res.ID, rerr)
			}
			return "", fmt.Errorf("%s: %w", op, ErrExists)
		}
	}
	return res.ID, nil
}

// NetworkRemove removes the network idOrName names. A missing network is an
// error wrapping ErrNotFound. The engine refuses while containers are
// attached; callers first check ContainersByLabel.
func (c *Client) NetworkRemove(ctx context.Context, idOrName string) error {
	return c.call(ctx, "remove network "+idOrName, func(ctx context.Context) error {
		_, err := c.api.NetworkRemove(ctx, idOrName, client.NetworkRemoveOptions{})
		return err
	})
}
