package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// Diagnostic codes (CONTRACT §6.1).
const (
	diagDockerUnavailable       = "docker_unavailable"
	diagDockerLimitsUnsupported = "docker_limits_unsupported"
	diagCapacityInsufficient    = "capacity_insufficient"
	diagRuntimeImageUnavailable = "runtime_image_unavailable"
	diagKVMUnavailable          = "kvm_unavailable"
	diagMicroArtifacts          = "microsandbox_artifacts_unavailable"
	diagRuntimeDownloadFailed   = "runtime_download_failed"
	diagProviderUnavailable     = "provider_unavailable"
)

// probe checks the host for cfg's provider and returns the first failing
// check's diagnostic, "" when the provider is ready. Order: daemon or KVM,
// Docker limit support, host capacity, installed Runtime files.
func probe(ctx context.Context, cfg *provider.Config, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if cfg.Docker != nil {
		return probeDocker(ctx, cfg)
	}
	return probeMicrosandbox(cfg)
}

func probeDocker(ctx context.Context, cfg *provider.Config) string {
	c, err := docker.New(cfg.Docker.Host)
	if err != nil {
		return diagProviderUnavailable
	}
	defer c.Close()
	info, err := c.Info(ctx)
	switch {
	case errors.Is(err, docker.ErrUnavailable), errors.Is(err, docker.ErrPermission):
		return diagDockerUnavailable
	case err != nil:
		return diagProviderUnavailable
	case !info.MemoryLimit || !info.CPUCfsQuota || info.Rootless:
		return diagDockerLimitsUnsupported
	}
	res := cfg.Specification.Resources
	if int64(info.NCPU) < res.CPUs || info.MemTotal < res.MemoryMiB<<20 {
		return diagCapacityInsufficient
	}
	_, os, arch, err := c.ImageInspect(ctx, cfg.Docker.Image)
	switch {
	case errors.Is(err, docker.ErrNotFound):
		return diagRuntimeImageUnavailable
	case errors.Is(err, docker.ErrUnavailable), errors.Is(err, docker.ErrPermission):
		return diagDockerUnavailable
	case err != nil:
		return diagProviderUnavailable
	case os != "linux" || arch != "amd64":
		return diagRuntimeImageUnavailable
	}
	return ""
}

func probeMicrosandbox(cfg *provider.Config) string {
	m := cfg.Microsandbox
	kvm, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return diagKVMUnavailable
	}
	kvm.Close()
	if int64(runtime.NumCPU()) < m.CPUs || memTotal() < m.MemoryMiB<<20 {
		return diagCapacityInsufficient
	}
	for _, p := range []string{m.HelperPath, m.RuntimePath, m.FirmwarePath} {
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() {
			return diagMicroArtifacts
		}
	}
	return ""
}

// memTotal is the host's memory in bytes from /proc/meminfo (0 unknown).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
