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

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
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

// hostSampler fills a health's host metrics as the platform's node
// program does (CONTRACT §11; health_linux.go): cpu_utilization,
// total_memory_bytes and effective_cpu_cores are always sent (null when
// unknown), cpu_count and available_* only when known. The utilization
// is the busy share of /proc/stat between two samples of one connection,
// unknown on its first.
type hostSampler struct {
	idle, total uint64
	ok          bool
}

func (s *hostSampler) fill(h *nodeproto.Health, stateDir string) {
	cpus := int64(runtime.NumCPU())
	h.CPUCount = &cpus
	eff := float64(cpus)
	if q := cgroupCPUs(); q > 0 && q < eff {
		eff = q
	}
	h.EffectiveCPUCores = &eff
	if total, avail := memInfo(); total > 0 {
		h.TotalMemoryBytes = &total
		if avail >= 0 && avail <= total {
			h.AvailableMemoryBytes = &avail
		}
	}
	var st unix.Statfs_t
	if unix.Statfs(stateDir, &st) == nil {
		free := int64(st.Bavail) * st.Bsize
		if free >= 0 && free <= 1<<53-1 {
			h.AvailableDiskBytes = &free
		}
	}
	if idle, total, ok := cpuTimes(); ok {
		if s.ok && total > s.total && idle >= s.idle {
			u := 1 - float64(idle-s.idle)/float64(total-s.total)
			u = max(0, min(1, u))
			h.CPUUtilization = &u
		}
		s.idle, s.total, s.ok = idle, total, true
	}
}

// cpuTimes reads the idle (idle + iowait) and total jiffies of /proc/stat.
func cpuTimes() (idle, total uint64, ok bool) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		total += n
		if i == 3 || i == 4 {
			idle += n
		}
	}
	return idle, total, true
}

// cgroupCPUs is the cgroup v2 CPU quota in cores (0: none or unknown).
func cgroupCPUs() float64 {
	data, err := os.ReadFile("/sys/fs/cgroup/cpu.max")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) != 2 || f[0] == "max" {
		return 0
	}
	quota, err1 := strconv.ParseFloat(f[0], 64)
	period, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
		return 0
	}
	return quota / period
}

// memInfo is MemTotal and MemAvailable of /proc/meminfo in bytes (0 and
// -1 when unknown).
func memInfo() (total, avail int64) {
	avail = -1
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			continue
		}
		switch name {
		case "MemTotal":
			total = kb << 10
		case "MemAvailable":
			avail = kb << 10
		}
	}
	return total, avail
}
