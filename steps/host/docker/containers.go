package docker

import (
	"context"

	"github.com/moby/moby/client"
)

// InstallationLabel is the container label naming the installation a
// sandbox container belongs to.
const InstallationLabel = "io.oac.installation"

// Container is what the installer reads of a container.
type Container struct {
	ID     string
	Names  []string
	Image  string
	State  string
	Labels map[string]string
}

// ContainersByLabel lists all containers, running or not, whose label key
// has value, like `docker ps --all --filter label=key=value`.
func (c *Client) ContainersByLabel(ctx context.Context, key, value string) ([]Container, error) {
	var res client.ContainerListResult
	err := c.call(ctx, "list containers labelled "+key+"="+value, func(ctx context.Context) (err error) {
		res, err = c.api.ContainerList(ctx, client.ContainerListOptions{
			All:     true,
			Filters: client.Filters{}.Add("label", key+"="+value),
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Container, 0, len(res.Items))
	for _, s := range res.Items {
		out = append(out, Container{ID: s.ID, Names: s.Names, Image: s.Image, State: string(s.State), Labels: s.Labels})
	}
	return out, nil
}
