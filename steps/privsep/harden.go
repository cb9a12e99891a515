package privsep

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

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
//     executable 5) is made close-on-exec, so the re-execution closes all
//     that root was started with and passed on without meaning to (for
//     example `oac-node-install status 7</etc/shadow`). Marking them instead
//     of closing them leaves alone any descriptor the Go runtime opened for
//     itself.
//
// No new privileges is a property of each thread: joinAndReexec sets it on
// the thread that re-executes, which every later thread inherits, and the
// second stage (reexeced) checks that it holds. The child calls harden in
// both stages, since execve resets dumpability.
func harden(reexeced bool) error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("make the service-account process not dumpable: %w", err)
	}
	if err := closeOnExecFrom(binaryFD + 1); err != nil {
		return fmt.Errorf("close the descriptors the service-account process inherited: %w", err)
	}
	if reexeced {
		if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || nnp != 1 {
			return fmt.Errorf("the service-account process may gain privileges (no_new_privs %d, %v)", nnp, err)
		}
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
