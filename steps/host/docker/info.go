package docker

import (
	"context"
	"slices"

	"github.com/moby/moby/client"
)

// HostInfo is what the installer's preflight reads from the engine.
type HostInfo struct {
	NCPU          int    // CPUs the engine sees
	MemTotal      int64  // bytes of memory the engine sees
	MemoryLimit   bool   // containers can be given a memory limit
	CPUCfsQuota   bool   // containers can be given a CPU quota
	CgroupVersion string // "1" or "2"
	Rootless      bool   // the engine runs rootless (unsupported)
	ServerVersion string
}

// Info reads the engine's host facts.
func (c *Client) Info(ctx context.Context) (HostInfo, error) {
	var res client.SystemInfoResult
	err := c.call(ctx, "docker info", func(ctx context.Context) (err error) {
		res, err = c.api.Info(ctx, client.InfoOptions{})
		return err
	})
	if err != nil {
		return HostInfo{}, err
	}
	i := res.Info
	return HostInfo{
		NCPU:          i.NCPU,
		MemTotal:      i.MemTotal,
		MemoryLimit:   i.MemoryLimit,
		CPUCfsQuota:   i.CPUCfsQuota,
		CgroupVersion: i.CgroupVersion,
		Rootless:      slices.Contains(i.SecurityOptions, "name=rootless"),
		ServerVersion: i.ServerVersion,
	}, nil
}
