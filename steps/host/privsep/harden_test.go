package privsep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// envGetfd makes the test binary a probe: it tries to copy descriptor fd
// out of process pid with pidfd_getfd and prints "dumpable=<its own
// dumpability> getfd=<ok or the error>". The value is "<pid> <fd>".
const envGetfd = "OAC_PRIVSEP_TEST_GETFD"

func getfdProbe(target string) int {
	var pid, fd int
	if _, err := fmt.Sscan(target, &pid, &fd); err != nil {
		fmt.Println(err)
		return 2
	}
	dumpable, _ := unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	result := "ok"
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err == nil {
		var got int
		got, err = unix.PidfdGetfd(pidfd, fd, 0)
		if err == nil {
			unix.Close(got)
		}
		unix.Close(pidfd)
	}
	if err != nil {
		result = err.Error()
	}
	fmt.Printf("dumpable=%d getfd=%s\n", dumpable, result)
	return 0
}

// probe runs the test binary, executed from the captured copy as nobody
// (the way Run executes a child, but without its hardening), against
// descriptor fd of pid.
func probe(t *testing.T, pid, fd int) (dumpable, getfd string) {
	t.Helper()
	b := captured(t)
	cmd := &exec.Cmd{
		Path: "/proc/self/fd/" + strconv.Itoa(b.fd()),
		Args: []string{memfdName, "-test.run=^$"},
		Env:  []string{envGetfd + "=" + fmt.Sprint(pid, " ", fd)},
		SysProcAttr: &syscall.SysProcAttr{
			Credential: &syscall.Credential{Uid: nobody, Gid: nogroup, Groups: []uint32{}},
		},
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe: %v; output %q", err, out)
	}
	fields := strings.Fields(string(bytes.TrimSpace(out)))
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "dumpable=") || !strings.HasPrefix(fields[1], "getfd=") {
		t.Fatalf("probe printed %q", out)
	}
	return strings.TrimPrefix(fields[0], "dumpable="), strings.TrimPrefix(strings.Join(fields[1:], " "), "getfd=")
}

// TestChildDescriptorsOutOfReach has a second process of the service
// account's uid try to copy a descriptor out of a running child with
// pidfd_getfd. A plain process of that uid is the control: the probe can
// take its descriptors.
func TestChildDescriptorsOutOfReach(t *testing.T) {
	needRoot(t)
	control := exec.Command("/bin/sleep", "300")
	control.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nogroup, Groups: []uint32{}}}
	if err := control.Start(); err != nil {
		t.Fatal(err)
	}
	_, got := probe(t, control.Process.Pid, 0)
	control.Process.Kill()
	control.Wait()
	if got != "ok" {
		t.Skipf("this kernel forbids pidfd_getfd between two processes of one user (%s; Yama ptrace_scope?)", got)
	}

	var dumpable, getfd string
	o := baseOptions(t, "sleep")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reported := 0
	o.Progress = func(e Event) {
		reported++
		if reported == 1 { // the child's pid
			pid, _ := strconv.Atoi(e.Text)
			dumpable, getfd = probe(t, pid, resultFD)
		}
		if reported == 2 {
			cancel()
		}
	}
	Run(ctx, o)
	if getfd != "operation not permitted" {
		t.Errorf("pidfd_getfd of the child's descriptor %d by another process of its uid: %q, want %q", resultFD, getfd, "operation not permitted")
	}
	// The probe itself ran from the captured copy without hardening: the
	// kernel started it not dumpable, because the account cannot read the
	// copy.
	if dumpable != "0" {
		t.Errorf("a process executed from the captured copy as nobody starts with dumpable=%s, want 0", dumpable)
	}
}

// TestChildClosesInheritedDescriptors gives the parent a descriptor
// without close-on-exec, as a shell's `7</etc/shadow` does, and expects the
// child not to hold it.
func TestChildClosesInheritedDescriptors(t *testing.T) {
	needRoot(t)
	secret := t.TempDir() + "/secret"
	if err := os.WriteFile(secret, []byte("root only\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(secret, unix.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	const stray = 77
	if err := unix.Dup3(fd, stray, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	defer unix.Close(stray)

	res, err := Run(context.Background(), baseOptions(t, "inspect"))
	if err != nil {
		t.Fatal(err)
	}
	var in inspection
	if err := res.Decode(&in); err != nil {
		t.Fatal(err)
	}
	for fd, name := range in.FDs {
		if name == secret {
			t.Errorf("the child holds %s on descriptor %d", secret, fd)
		}
	}
	if in.Dumpable != 0 || in.NoNewPrivs != 1 {
		t.Errorf("child dumpable=%d no_new_privs=%d, want 0 and 1", in.Dumpable, in.NoNewPrivs)
	}
}
