package privsep

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// harden keeps other processes of the service account out of the child and
// what it holds, before any handler code runs:
//
//   - not dumpable (PR_SET_DUMPABLE 0): a process of the same user can no
//     longer trace it, read its memory or copy its descriptors with
//     pidfd_getfd. The kernel already starts it so, because the sealed copy
//     it executes is not readable by the account (Binary), but an execve of
//     a readable file would make it dumpable again;
//   - every descriptor above the intended ones (0-2, the pipes 3 and 4, the
//     executable 5) is made close-on-exec, so that nothing the child starts
//     inherits one. Root marks its own before it forks (childThread), so
//     the child starts with none; marking instead of closing leaves alone
//     any descriptor the Go runtime opened for itself;
//   - it checks what the forking thread gave it: no new privileges, and a
//     session keyring of its own user's (checkKeyring), never root's.
func harden() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the service-account process not dumpable: %w", err)
	}
	if err := closeOnExecFrom(binaryFD + 1); err != nil {
		return fmt.Errorf("close the descriptors the service-account process inherited: %w", err)
	}
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || nnp != 1 {
		return fmt.Errorf("the service-account process may gain privileges (no_new_privs %d, %v)", nnp, err)
	}
	return checkKeyring()
}

// childThread prepares the calling thread, locked to its goroutine and
// never returned to the runtime, to fork a service-account child that
// inherits its settings:
//
//   - a new anonymous session keyring (keyctl KEYCTL_JOIN_SESSION_KEYRING
//     with a NULL name; the x/sys wrapper passes a pointer to "" instead,
//     which names a shared keyring), handed to the account's uid and gid
//     (KEYCTL_CHOWN), so that root's session keyring is not possessed, and
//     so readable, by the service account. A keyring joined by one thread
//     is not joined by the process's other threads; a child forked from
//     this thread starts with it on its only thread, which every later
//     thread inherits. A kernel built without keys (ENOSYS) has no keyring
//     to leave;
//   - no new privileges, which the child and all it executes inherit;
//   - every descriptor of root above 2 close-on-exec: one root was started
//     with and would pass on (`oac-node-install status 7</etc/shadow`)
//     never reaches the child. Go opens all of its own close-on-exec; the
//     child's pipes are put in place by the fork itself.
func childThread(uid, gid int) error {
	id, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	switch {
	case errno == unix.ENOSYS:
	case errno != 0:
		return fmt.Errorf("join a new session keyring: %w", errno)
	default:
		if _, err := unix.KeyctlInt(unix.KEYCTL_CHOWN, int(id), uid, gid, 0); err != nil {
			return fmt.Errorf("give the new session keyring to uid %d: %w", uid, err)
		}
	}
	if err := forbidNewPrivileges(); err != nil {
		return err
	}
	if err := closeOnExecFrom(3); err != nil {
		return fmt.Errorf("mark the installer's descriptors close-on-exec: %w", err)
	}
	return nil
}

// checkKeyring makes sure the process's session keyring belongs to its own
// user: a child started with root's would possess, and so could read, it.
// A kernel without keys (ENOSYS) has none.
func checkKeyring() error {
	desc, err := unix.KeyctlString(unix.KEYCTL_DESCRIBE, unix.KEY_SPEC_SESSION_KEYRING)
	if errors.Is(err, unix.ENOSYS) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("describe the session keyring: %w", err)
	}
	// type;uid;gid;perm;description
	f := strings.Split(desc, ";")
	if len(f) < 5 || f[0] != "keyring" || f[1] != strconv.Itoa(os.Getuid()) {
		return fmt.Errorf("the session keyring %q is not this user's (uid %d): the installer did not give the child a keyring of its own", desc, os.Getuid())
	}
	return nil
}

// forbidNewPrivileges sets no_new_privs on the calling thread, which the
// threads it creates and the programs it executes inherit.
func forbidNewPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("forbid new privileges to the service-account process: %w", err)
	}
	return nil
}

// closeOnExecFrom marks every descriptor from first up close-on-exec:
// close_range(2) with CLOSE_RANGE_CLOEXEC, or, on kernels before 5.11,
// each descriptor listed in /proc/self/fd.
func closeOnExecFrom(first int) error {
	err := unix.CloseRange(uint(first), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if err == nil || !(errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL)) {
		return err
	}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		if fd, err := strconv.Atoi(name); err == nil && fd >= first {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}
