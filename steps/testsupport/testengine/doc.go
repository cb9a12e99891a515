// Package testengine is test support: it starts a private Docker Engine
// (dockerd) for one test, so that a test can stop, kill, pause or fill an
// engine, or run several engines at once (a fleet of test hosts, each a
// node of one installation), without touching the machine's engine.
//
//	machine                         private namespaces (mount, network, pid, uts, ipc)
//	<dir>/sock/docker.sock   ◀───   dockerd -H unix://<dir>/sock/docker.sock (PID 1)
//	<dir>/data (tmpfs when sized)   --data-root, --storage-driver vfs
//	<dir>/exec, <dir>/docker.pid    --exec-root, --pidfile; its containerd below exec
//	<dir>/daemon.json ("{}")        --config-file: not the machine's daemon.json
//	<dir>/etc-docker        ───▶    /etc/docker (its key.json)
//	                                /run: a fresh tmpfs (the machine's containerd
//	                                socket and dockerd's runtime files are not seen)
//	                                /sys/fs/cgroup: read-only
//	                                network: its own loopback and bridges,
//	                                --iptables=false --ip6tables=false, no TCP
//
// dockerd runs as PID 1 of its own PID namespace, so that a SIGKILL of it
// (Kill, and the teardown) ends its containerd with it, and its mounts and
// network namespace vanish with the last process. The machine's
// /etc/docker/daemon.json (a data root and a storage driver) is not read:
// the engine has an empty configuration file of its own, the vfs storage
// driver (which needs no mounts and works on any file system) and no
// firewall rules. Its cgroup hierarchies are read-only: the engine reports
// the machine's cgroup controllers (the installer's preflight asks for the
// memory and CPU limits) but cannot make a cgroup, so it runs no
// container; it creates networks and loads images, which is what the
// installer asks of it.
//
// Start waits until the engine answers GET /_ping and registers a teardown
// with t.Cleanup that kills it, unmounts the data root's tmpfs and removes
// the directory: nothing stays on the machine. Stop (SIGTERM, then wait),
// Kill (SIGKILL), Pause and Continue (SIGSTOP and SIGCONT to each of its
// processes) and Restart (a new dockerd on the same data root) are the
// faults a test makes. Docker's socket file is made anew by each start,
// so a test host binds the socket's directory (SocketDir), not the file.
//
// Start skips the test, with one line saying why, when it does not run as
// root or the machine has no dockerd.
package testengine
