package testhost

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// BootTarget is the unit systemd boots inside: basic.target and the D-Bus
// socket, so that a unit with default dependencies (the node's) starts
// without pulling anything else.
const BootTarget = "oac-testhost.target"

const bootTargetText = `[Unit]
Description=oac-node-install test host
Requires=basic.target
After=basic.target
Wants=dbus.socket
AllowIsolate=yes
`

// unitDirs are the unit search paths of the machine whose .wants and
// .requires directories say what the targets pull.
var unitDirs = []string{"/etc/systemd/system", "/lib/systemd/system", "/usr/lib/systemd/system"}

// pulledTargets are the targets the boot target and the node's unit reach;
// whatever they want or require is masked unless it is a target or slice.
var pulledTargets = []string{
	"sysinit.target", "basic.target", "sockets.target", "timers.target", "paths.target",
	"slices.target", "local-fs.target", "local-fs-pre.target", "swap.target",
	"cryptsetup.target", "integritysetup.target", "veritysetup.target",
	"network.target", "network-pre.target", "network-online.target", "nss-lookup.target",
	"remote-fs.target", "remote-fs-pre.target", "time-set.target", "time-sync.target",
	BootTarget,
}

// alwaysMasked are units that must not run inside whether or not a target
// pulls them on this machine: they act on the shared root filesystem, the
// kernel or the machine's Docker Engine.
var alwaysMasked = []string{
	"tmp.mount", "docker.socket", "docker.service", "containerd.service",
	"emergency.service", "emergency.target", "rescue.service", "rescue.target",
	"systemd-journald.service", "systemd-journald.socket", "systemd-journald-dev-log.socket",
	"systemd-journald-audit.socket", "systemd-journal-flush.service",
	"systemd-udevd.service", "systemd-udev-trigger.service", "systemd-udev-settle.service",
	"systemd-tmpfiles-setup.service", "systemd-tmpfiles-setup-dev.service", "systemd-tmpfiles-clean.service",
	"systemd-tmpfiles-clean.timer", "systemd-sysctl.service", "systemd-modules-load.service",
	"systemd-binfmt.service", "systemd-remount-fs.service", "systemd-timesyncd.service",
	"systemd-networkd.service", "systemd-networkd-wait-online.service", "systemd-resolved.service",
	"NetworkManager-wait-online.service", "systemd-logind.service", "systemd-pstore.service",
	"systemd-update-utmp.service", "systemd-random-seed.service", "kmod-static-nodes.service",
	"getty.target", "console-getty.service", "cron.service", "apt-daily.timer", "apt-daily-upgrade.timer",
}

// neverMasked are pulled units the host needs: the D-Bus system bus.
var neverMasked = map[string]bool{"dbus.socket": true, "dbus.service": true}

// rootfsJournal are journald's units, which a Rootfs host runs: its
// /var/log is its own (the machine's host shares the machine's, so there
// they stay masked), and dbus-broker, like a real host's services, logs
// to the journal and does not start without its socket.
var rootfsJournal = map[string]bool{
	"systemd-journald.service": true, "systemd-journald.socket": true,
	"systemd-journald-dev-log.socket": true, "systemd-journal-flush.service": true,
}

// masks lists the units to mask: alwaysMasked, and everything in the
// .wants and .requires directories of pulledTargets in unitDirs below root
// ("" for the machine's, or a rootfs: its own units, which differ from
// release to release), less targets, slices and neverMasked, and the D-Bus
// activation aliases (dbus-org.*) of its /etc/systemd/system.
func masks(root string) []string {
	set := map[string]bool{}
	for _, u := range alwaysMasked {
		set[u] = true
	}
	for _, dir := range unitDirs {
		for _, t := range pulledTargets {
			for _, suffix := range []string{".wants", ".requires"} {
				entries, _ := os.ReadDir(filepath.Join(root, dir, t+suffix))
				for _, e := range entries {
					set[e.Name()] = true
				}
			}
		}
	}
	aliases, _ := filepath.Glob(filepath.Join(root, "/etc/systemd/system/dbus-org.*.service"))
	for _, a := range aliases {
		set[filepath.Base(a)] = true
	}
	var out []string
	for u := range set {
		if neverMasked[u] || (root != "" && rootfsJournal[u]) || strings.HasSuffix(u, ".slice") || (strings.HasSuffix(u, ".target") && !contains(alwaysMasked, u)) {
			continue
		}
		out = append(out, u)
	}
	sort.Strings(out)
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// quote single-quotes s for sh.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// writeRunSystemd prepares, under dir/run-systemd, what the init script
// copies into the private /run/systemd: the boot target and the masks of
// the units below root ("" for the machine's).
func writeRunSystemd(dir, root string) error {
	base := filepath.Join(dir, "run-systemd")
	for _, sub := range []string{"system", "system.control"} {
		if err := os.MkdirAll(filepath.Join(base, sub), 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(base, "system", BootTarget), []byte(bootTargetText), 0o644); err != nil {
		return err
	}
	for _, u := range masks(root) {
		if err := os.Symlink("/dev/null", filepath.Join(base, "system.control", u)); err != nil {
			return err
		}
	}
	return nil
}

// engineSocket is the Docker Engine socket a host gets: the machine's
// (machine, a socket bound at /run/docker.sock), the directory of the
// host's own engine's socket (dir, bound at engineRunDir, with
// /run/docker.sock a link into it), or none.
type engineSocket struct {
	machine string
	dir     string
}

// engineRunDir is where a host with an engine of its own sees the
// directory of that engine's socket.
const engineRunDir = "/run/oac-testengine"

// ownEngineLines are the init script's lines that give a host below root
// ("" for the machine's root) the own engine's socket directory dir, once
// root's /run is the host's tmpfs.
func ownEngineLines(w func(string, ...any), root, dir string) {
	r := quote(root + engineRunDir)
	w("mkdir -p %s && mount --bind %s %s", r, quote(dir), r)
	w("ln -s %s/docker.sock %s", strings.TrimPrefix(engineRunDir, "/run/"), quote(root+"/run/docker.sock"))
}

// initScript is run by unshare as PID 1 of the new namespaces. dir holds
// the copies (etc, var-lib) and run-systemd (writeRunSystemd); eng is
// the engine socket the host gets.
func initScript(dir string, hs []hierarchy, eng engineSocket) string {
	dockerSocket := eng.machine
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	d := quote(dir)
	w("#!/bin/sh")
	w("set -eu")
	w("mount --make-rprivate /")
	// Detach the namespace's copies of the machine's cgroup mounts (on a
	// hybrid machine its v1 hierarchies): the host mounts cgroup2 only,
	// and none of the machine's hierarchies stays reachable inside.
	w("if mountpoint -q /sys/fs/cgroup; then umount -l /sys/fs/cgroup; fi")
	// Detach the FUSE file systems other tests have mounted: a copy of
	// their mount held here would keep their servers from ending. This
	// host's own (the power-cut copies, under dir) stay.
	w("awk '$3 ~ /^fuse/ {print $2}' /proc/self/mounts | while read -r m; do m=$(printf '%%b' \"$m\"); case \"$m\" in %s/*) continue;; esac; umount -l \"$m\" || true; done", d)
	if dockerSocket != "" {
		// Keep a handle on the engine's socket before /run is replaced.
		w("touch %s/docker.sock && mount --bind %s %s/docker.sock", d, quote(dockerSocket), d)
	}
	w("mount --bind %s/etc /etc", d)
	w("mount --bind %s/var-lib /var/lib", d)
	// A private copy of /usr/local/sbin, where an install keeps the
	// command on the host: the machine's own stays as it is.
	// The copy is made at the first boot only: a host booted again (after
	// a power cut) keeps what its runs wrote there. Any failure stops the
	// boot, so that no run can reach the machine's own directory.
	w("if [ -d /usr/local/sbin ]; then")
	w("  if [ ! -d %s/usr-local-sbin ]; then mkdir -m 755 %s/usr-local-sbin || exit 1; cp -a /usr/local/sbin/. %s/usr-local-sbin/ || exit 1; fi", d, d, d)
	w("  mount --bind %s/usr-local-sbin /usr/local/sbin || exit 1", d)
	w("fi")
	w("mount -t tmpfs -o mode=755,nosuid,nodev tmpfs /run")
	w("mkdir -p /run/systemd/system /run/systemd/system.control /run/lock")
	if dockerSocket != "" {
		w("touch /run/docker.sock && mount --bind %s/docker.sock /run/docker.sock", d)
	}
	if eng.dir != "" {
		ownEngineLines(w, "", eng.dir)
	}
	// A private /dev: systemd and its units create nodes and links there,
	// and the machine's /dev is one devtmpfs shared by every namespace.
	w("mkdir -p %s/dev && mount -t tmpfs -o mode=755,nosuid tmpfs %s/dev", d, d)
	w("for n in null zero full random urandom tty fuse kvm net/tun; do")
	w("  [ -e /dev/$n ] || continue; mkdir -p %s/dev/$(dirname $n); touch %s/dev/$n; mount --bind /dev/$n %s/dev/$n", d, d, d)
	w("done")
	w("mkdir -p %s/dev/pts %s/dev/shm %s/dev/mqueue", d, d, d)
	w("mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts %s/dev/pts && ln -s pts/ptmx %s/dev/ptmx", d, d)
	w("mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs %s/dev/shm", d)
	w("ln -s /proc/self/fd %s/dev/fd; ln -s /proc/self/fd/0 %s/dev/stdin; ln -s /proc/self/fd/1 %s/dev/stdout; ln -s /proc/self/fd/2 %s/dev/stderr", d, d, d, d)
	w("mount --move %s/dev /dev", d)
	// Read-only kernel interfaces, as in a container: nothing inside may
	// change a sysctl or trigger the machine's devices.
	w("mount --bind /proc/sys /proc/sys && mount -o remount,bind,ro /proc/sys")
	w("mount --bind /sys /sys && mount -o remount,bind,ro /sys")
	// The sub-cgroup of the machine's cgroup2 hierarchy, the root of the
	// cgroup namespace, is all the host's systemd sees (cgroupLayout).
	for _, h := range hs {
		w("mount %s /sys/fs/cgroup", h.mount)
	}
	w("cp -a %s/run-systemd/. /run/systemd/", d)
	w("export container=oac-testhost")
	w("exec /lib/systemd/systemd --system --unit=%s --log-target=console --log-level=notice --show-status=0", BootTarget)
	return b.String()
}
