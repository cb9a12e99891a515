package testhost

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// checkRootfs refuses a rootfs that is not a directory holding systemd, or
// that has anything mounted inside: the host's overlay would show the
// mount's contents as the rootfs's own (a /proc or /dev left by an
// interrupted build, a file system of another test), and a rebuild of the
// cache would remove through it.
func checkRootfs(root string) error {
	if !filepath.IsAbs(root) || strings.ContainsAny(root, ",:\\ \t\n") {
		return fmt.Errorf("rootfs %q: needs an absolute path without commas, colons, spaces or backslashes (it becomes an overlay's lowerdir)", root)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("rootfs %s is not a directory: %v", root, err)
	}
	if _, err := os.Stat(filepath.Join(root, Systemd)); err != nil {
		return fmt.Errorf("rootfs %s holds no systemd (%s): build it with the systemd package", root, Systemd)
	}
	inside, err := mountsBelow(root)
	if err != nil {
		return err
	}
	if len(inside) > 0 {
		return fmt.Errorf("rootfs %s has file systems mounted inside (%s): a test host does not boot it, since its root would show them as the rootfs's own; unmount them (umount -R) and run the test again", root, strings.Join(inside, ", "))
	}
	return nil
}

// mountsBelow lists the machine's mount points at or below dir.
func mountsBelow(dir string) ([]string, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMount(fields[4])
		if mp == real || strings.HasPrefix(mp, real+"/") {
			out = append(out, mp)
		}
	}
	return out, s.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// rootfsInitScript is initScript for a Rootfs host: an overlay of rootfs
// (the host's writes go to dir/upper) with private /proc, /sys (read-only),
// /dev, /run and cgroup2 at /sys/fs/cgroup, the machine's Docker socket and
// binds, becomes the root with pivot_root, and the rootfs's own systemd
// boots. Every mount is in the host's mount namespace only: they end with
// it. The network namespace is the machine's, so loopback (oac-devcore)
// and the mirror are reachable.
func rootfsInitScript(dir, rootfs string, hs []hierarchy, eng engineSocket, binds []string) string {
	dockerSocket := eng.machine
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	d := quote(dir)
	r := quote(filepath.Join(dir, "root"))
	w("#!/bin/sh")
	w("set -eu")
	w("mount --make-rprivate /")
	w("mount -t overlay overlay -o lowerdir=%s,upperdir=%s/upper,workdir=%s/work %s", rootfs, dir, dir, r)
	w("mount -t proc -o nosuid,nodev,noexec proc %s/proc", r)
	w("mount --bind %s/proc/sys %s/proc/sys && mount -o remount,bind,ro %s/proc/sys", r, r, r)
	w("mount -t sysfs -o ro,nosuid,nodev,noexec sysfs %s/sys", r)
	for _, h := range hs {
		w("mount %s -o nosuid,nodev,noexec %s/sys/fs/cgroup", h.mount, r)
	}
	w("mount -t tmpfs -o mode=755,nosuid tmpfs %s/dev", r)
	w("for n in null zero full random urandom tty fuse kvm net/tun; do")
	w("  [ -e /dev/$n ] || continue; mkdir -p %s/dev/$(dirname $n); touch %s/dev/$n; mount --bind /dev/$n %s/dev/$n", r, r, r)
	w("done")
	w("mkdir -p %s/dev/pts %s/dev/shm %s/dev/mqueue", r, r, r)
	w("mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts %s/dev/pts && ln -s pts/ptmx %s/dev/ptmx", r, r)
	w("mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs %s/dev/shm", r)
	w("ln -s /proc/self/fd %s/dev/fd; ln -s /proc/self/fd/0 %s/dev/stdin; ln -s /proc/self/fd/1 %s/dev/stdout; ln -s /proc/self/fd/2 %s/dev/stderr", r, r, r, r)
	w("mount -t tmpfs -o mode=755,nosuid,nodev tmpfs %s/run", r)
	w("mkdir -p %s/run/systemd/system %s/run/systemd/system.control %s/run/lock", r, r, r)
	w("cp -a %s/run-systemd/. %s/run/systemd/", d, r)
	if dockerSocket != "" {
		w("touch %s/run/docker.sock && mount --bind %s %s/run/docker.sock", r, quote(dockerSocket), r)
	}
	if eng.dir != "" {
		ownEngineLines(w, filepath.Join(dir, "root"), eng.dir)
	}
	for _, p := range binds {
		w("mkdir -p %s%s && mount --bind %s %s%s", r, quote(p), quote(p), r, quote(p))
	}
	w("cd %s", r)
	w("mkdir -p .oac-oldroot && pivot_root . .oac-oldroot")
	w("cd / && umount -l /.oac-oldroot && rmdir /.oac-oldroot")
	w("export container=oac-testhost")
	w("exec %s --system --unit=%s --log-target=console --log-level=notice --show-status=0", Systemd, BootTarget)
	return b.String()
}

// Mirror is the Debian mirror rootfs builds download from.
var Mirror = "http://deb.debian.org/debian"

// RootfsCache is where built rootfs live, one directory per suite and
// variant, outside any checkout: a build takes 15–40 s, a cached one none.
// OAC_ROOTFS_CACHE overrides it.
func RootfsCache() string {
	if d := os.Getenv("OAC_ROOTFS_CACHE"); d != "" {
		return d
	}
	return "/var/cache/oac-node-install-tests/rootfs"
}

// Bus says which D-Bus system bus a rootfs has.
type Bus string

const (
	// BusDaemon is dbus-daemon (the dbus package), Debian's default.
	BusDaemon Bus = "dbus"
	// BusBroker is dbus-broker as the system bus.
	BusBroker Bus = "dbus-broker"
	// BusNone is no bus daemon at all: only systemd's private socket.
	BusNone Bus = "none"
)

// rootfsPackages are what a rootfs holds besides Debian's minbase: systemd
// as PID 1, the account tools, the CA bundle, curl (the generated
// bootstrap command downloads with it) and python3 (the node program's
// launcher runs it from systemd's service PATH). No Docker CLI: the node
// reaches the machine's engine over its socket.
var rootfsPackages = []string{"systemd", "systemd-sysv", "passwd", "login", "ca-certificates", "curl", "python3"}

// Rootfs returns a root file system of Debian's suite with bus as the
// system bus, built with mmdebstrap into RootfsCache and reused while the
// suite's Release file on the mirror is the one it was built from (when
// the mirror cannot be reached, a cached build is used as it is). It skips
// the test, with one line saying why, without root or mmdebstrap.
func Rootfs(t testing.TB, suite string, bus Bus) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("testhost: a rootfs build needs root")
	}
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		t.Skip("testhost: a rootfs build needs mmdebstrap (apt-get install mmdebstrap)")
	}
	name := suite
	if bus != BusDaemon {
		name += "-" + string(bus)
	}
	cache := RootfsCache()
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cache, name)
	// One build of a suite at a time, across test processes.
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	release, rerr := releaseDigest(suite)
	stamp := filepath.Join(dir, ".oac-release")
	old, _ := os.ReadFile(stamp)
	_, serr := os.Stat(filepath.Join(dir, Systemd))
	switch {
	case serr == nil && rerr != nil:
		t.Logf("testhost: %s: the mirror's Release is out of reach (%v): booting the cached build", name, rerr)
		return dir
	case serr == nil && string(old) == release:
		t.Logf("testhost: %s: cached build of Release %.12s", name, release)
		return dir
	case rerr != nil:
		t.Fatalf("testhost: %s: no cached build and the mirror's Release is out of reach: %v", name, rerr)
	}
	pkgs := append([]string{}, rootfsPackages...)
	switch bus {
	case BusDaemon:
		pkgs = append(pkgs, "dbus")
	case BusBroker:
		pkgs = append(pkgs, "dbus-broker")
	case BusNone:
	default:
		t.Fatalf("testhost: unknown bus %q", bus)
	}
	start := time.Now()
	tmp := dir + ".new"
	for _, p := range []string{tmp, dir + ".old"} {
		if err := removeRootfs(p); err != nil {
			t.Fatal(err)
		}
	}
	// Valid-Until is not checked (signatures are): sid's and forky's
	// Release expires within a week, and a mirror that serves a stored
	// copy, or a machine whose clock is ahead, would refuse them.
	cmd := exec.Command("mmdebstrap", "--variant=minbase", "--mode=root", "--quiet", "--aptopt=Acquire::Check-Valid-Until \"false\"",
		"--include="+strings.Join(pkgs, ","), suite, tmp, Mirror)
	if out, err := cmd.CombinedOutput(); err != nil {
		removeRootfs(tmp)
		t.Fatalf("testhost: mmdebstrap %s: %v\n%s", name, err, out)
	}
	if bus == BusNone {
		// systemd's packages recommend no bus, but make sure: the host
		// must reach systemd over its private socket only.
		for _, p := range []string{"usr/bin/dbus-daemon", "usr/bin/dbus-broker"} {
			if _, err := os.Stat(filepath.Join(tmp, p)); err == nil {
				t.Fatalf("testhost: %s: the rootfs without a bus holds %s", name, p)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ".oac-release"), []byte(release), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err == nil {
		if err := os.Rename(dir, dir+".old"); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	if err := removeRootfs(dir + ".old"); err != nil {
		t.Fatal(err)
	}
	t.Logf("testhost: %s: built with mmdebstrap in %s (Release %.12s)", name, time.Since(start).Round(time.Millisecond), release)
	return dir
}

// removeRootfs removes a rootfs directory, refusing one with a mount
// inside (RemoveAll would remove through it).
func removeRootfs(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	inside, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	if len(inside) > 0 {
		return fmt.Errorf("testhost: %s has file systems mounted inside (%s): not removing it; unmount them (umount -R) and run again", dir, strings.Join(inside, ", "))
	}
	return os.RemoveAll(dir)
}

// releaseDigest is the SHA-256 of the suite's Release file on Mirror: it
// changes whenever the suite's index does.
func releaseDigest(suite string) (string, error) {
	c := http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get(Mirror + "/dists/" + suite + "/Release")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s/dists/%s/Release: %s", Mirror, suite, resp.Status)
	}
	h := sha256.New()
	if _, err := io.Copy(h, resp.Body); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// rootfsDockerGroup gives a Rootfs host the group that owns the machine's
// Docker socket, as a host where Docker is installed has it (the docker
// package makes it): the rootfs has no Docker, and the installer refuses a
// socket whose group it cannot name. The group lines go to the overlay's
// upper directory, over copies of the rootfs's /etc/group and
// /etc/gshadow; the rootfs stays as it is.
func (h *Host) rootfsDockerGroup() error {
	sock := ""
	for _, s := range []string{"/run/docker.sock", "/var/run/docker.sock"} {
		if h.Engine != nil {
			sock = h.Engine.Socket
			break
		}
		if fi, err := os.Stat(s); err == nil && fi.Mode()&os.ModeSocket != 0 {
			sock = s
			break
		}
	}
	if sock == "" {
		return nil
	}
	fi, err := os.Stat(sock)
	if err != nil {
		return err
	}
	gid := fi.Sys().(*syscall.Stat_t).Gid
	if gid == 0 {
		return nil
	}
	name := "docker"
	if b, err := os.ReadFile("/etc/group"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Split(l, ":")
			if len(f) >= 3 && f[2] == fmt.Sprint(gid) {
				name = f[0]
			}
		}
	}
	group, err := os.ReadFile(filepath.Join(h.rootfs, "etc/group"))
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(group), "\n") {
		f := strings.Split(l, ":")
		if len(f) >= 3 && f[2] == fmt.Sprint(gid) {
			return nil // the rootfs has a group of that id already
		}
		if len(f) >= 3 && f[0] == name {
			return fmt.Errorf("rootfs %s has a group %s of id %s, the machine's Docker socket group id %d", h.rootfs, name, f[2], gid)
		}
	}
	etc := filepath.Join(h.dir, "upper", "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return err
	}
	for _, f := range []struct{ file, line string }{{"group", fmt.Sprintf("%s:x:%d:\n", name, gid)}, {"gshadow", name + ":!::\n"}} {
		src := filepath.Join(h.rootfs, "etc", f.file)
		b, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		dst := filepath.Join(etc, f.file)
		if err := os.WriteFile(dst, append(b, f.line...), st.Mode().Perm()); err != nil {
			return err
		}
		sys := st.Sys().(*syscall.Stat_t)
		if err := os.Chown(dst, int(sys.Uid), int(sys.Gid)); err != nil {
			return err
		}
		if err := os.Chmod(dst, st.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}
