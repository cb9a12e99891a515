// Package testhost is test support: it boots a real systemd as PID 1 of a
// private set of namespaces on a machine whose own PID 1 is not systemd
// (TESTHOST.md), so that tests run the installer's real systemd and account
// adapters, and later the real binary, without touching the machine.
//
//	machine                         private namespaces (pid, mount, uts, ipc, cgroup)
//	sub-cgroup oac-testhost-… ───▶  cgroup root
//	<tmp>/etc, <tmp>/var-lib  ───▶  /etc, /var/lib (copies, bind-mounted)
//	<tmp>/usr-local-sbin      ───▶  /usr/local/sbin (copy, bind-mounted)
//	                                /run, /dev, /sys/fs/cgroup: fresh tmpfs
//	/run/docker.sock          ───▶  /run/docker.sock (bind, when present)
//	or with Options.OwnEngine a private dockerd (package testengine):
//	its socket's directory    ───▶  /run/oac-testengine, and
//	                                /run/docker.sock -> oac-testengine/docker.sock
//	                                /sys, /proc/sys: read-only
//	                                PID 1: /lib/systemd/systemd --system
//
// Start copies /etc and /var/lib (the package managers' and other
// services' bulky state in /var/lib becomes empty directories), makes a sub-cgroup in each hierarchy
// the machine has (cgroup v2, or the hybrid layout: name=systemd v1 plus
// cgroup2 at /sys/fs/cgroup/unified), launches unshare into those cgroups
// and an init script that builds the private mounts, then execs systemd
// with container=oac-testhost into a small boot target that reaches
// basic.target. It waits until the manager reports that boot finished and
// records how long that took (BootTime).
//
// The namespace shares the machine's root filesystem, kernel and network,
// so before systemd starts the init script masks (in
// /run/systemd/system.control, which outranks /etc) every unit that
// sysinit.target, basic.target and the targets they pull want, except
// targets, slices and the D-Bus socket: no tmpfiles cleaning of the shared
// /tmp, no udev trigger, sysctl, module loading, timers, journald or
// docker.socket. /sys and /proc/sys are read-only for the same reason, and
// /dev is a private tmpfs holding only the usual device nodes.
//
// The host's systemd always runs in the unified layout: the launcher joins
// a sub-cgroup of the machine's cgroup2 hierarchy only (at /sys/fs/cgroup,
// or /sys/fs/cgroup/unified on a hybrid machine), mounted at the host's
// /sys/fs/cgroup, so that it never mounts the machine's v1 hierarchies
// and leaves nothing at their roots (Teardown fails when one was mounted
// inside).
//
// With Options.Rootfs the host boots a Debian release instead of the
// machine's userland (Rootfs builds it with mmdebstrap and caches it by
// suite in /var/cache/oac-node-install-tests/rootfs, rebuilt when the
// suite's Release changes): an overlay of the rootfs, private /proc, /sys,
// /dev, /run and cgroup2, the machine's Docker socket (and a group of its
// gid) and Options.Binds, becomes the root with pivot_root, and the masks
// are computed from the rootfs's own units. A rootfs with anything mounted
// inside is refused.
//
// Exec and Command run a program inside with nsenter. Teardown (registered
// with t.Cleanup) kills PID 1 with SIGKILL, which ends every process in the
// namespace, removes the sub-cgroups and the copies. A last cleanup
// compares the machine's /etc/passwd, /etc/group, /etc/shadow,
// /etc/gshadow, /etc/systemd/system, /etc/oac-node, /usr/local/sbin,
// kernel.core_pattern, the directories below this process's cgroup in the
// machine's cgroup2 hierarchy, and /var/log (which the host shares: the sizes of
// lastlog, faillog, btmp, wtmp and tallylog, and no entry new or gone
// outside journal/ and private/) with their state before Start and fails
// the test when anything changed.
//
// Start skips the test, with one line saying why, when it does not run as
// root or the machine lacks systemd, unshare or nsenter.
//
// In crashtest builds, StartPowerCut puts each copy on a power-cut file
// system (package journal/powercut), and PowerCut cuts the host's power:
// PID 1 is killed, the copies revert to what was made durable, and a new
// systemd boots on them and starts the units enabled in the copy of /etc
// that the machine does not enable, as a machine's boot does.
package testhost
