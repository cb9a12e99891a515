package privsep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The test binary is its own service-account child: Run executes the
// captured test binary, whose TestMain serves the roles below.
func TestMain(m *testing.M) {
	ServeChild(os.Args[1:], testRoles)
	if home := os.Getenv(envIntermediate); home != "" {
		os.Exit(intermediateParent(home))
	}
	if target := os.Getenv(envGetfd); target != "" {
		os.Exit(getfdProbe(target))
	}
	if os.Getenv(envReportSignals) != "" {
		fmt.Println(InterruptSignals())
		os.Exit(0)
	}
	if home := os.Getenv(envNohup); home != "" {
		os.Exit(nohupParent(home))
	}
	os.Exit(m.Run())
}

// envIntermediate makes the test binary an intermediate parent: it runs the
// "sleep" role as nobody with the given home, prints the child's pid, and
// waits to be killed.
const envIntermediate = "OAC_PRIVSEP_TEST_INTERMEDIATE_HOME"

func intermediateParent(home string) int {
	b, err := Capture()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = Run(context.Background(), Options{
		Binary: b, UID: nobody, GID: nogroup, Home: home, Role: "sleep",
		Progress: func(e Event) { fmt.Println(e.Text) },
	})
	fmt.Fprintln(os.Stderr, err)
	return 1
}

const (
	nobody  = 65534
	nogroup = 65534
)

// inspection is what the "inspect" role reports about the child it runs in.
type inspection struct {
	UID, EUID, GID, EGID int
	Groups               []int
	Umask                int
	Stdin                string
	StdinIsDevNull       bool
	PID, SID, PGID       int
	SessionKeyring       int
	ThreadKeyrings       []int
	// KeyringOwner is the uid field of the session keyring's description.
	KeyringOwner         string
	Env                  []string
	Exe                  string
	Cwd                  string
	Args                 []string
	Dumpable, NoNewPrivs int
	// FDs maps each open descriptor to what it names.
	FDs map[int]string
}

type echoRequest struct {
	Stdout, Stderr []byte
	Phases, Lines  []string
	// Transfers are progress reports of a 100-byte file; the child
	// answers with its NO_COLOR.
	Transfers []int64
	NoColor   string
}

type failRequest struct {
	Class, Message string
}

type sleepRequest struct {
	IgnoreTERM bool
}

var testRoles = map[string]Handler{
	"inspect": func(ctx context.Context, c *Child) (any, error) {
		var in inspection
		in.UID, in.EUID, in.GID, in.EGID = os.Getuid(), os.Geteuid(), os.Getgid(), os.Getegid()
		in.Groups, _ = unix.Getgroups()
		in.Umask = unix.Umask(0o077)
		in.Stdin, _ = os.Readlink("/proc/self/fd/0")
		var st0, stNull unix.Stat_t
		if unix.Fstat(0, &st0) == nil && unix.Stat(os.DevNull, &stNull) == nil {
			in.StdinIsDevNull = st0.Dev == stNull.Dev && st0.Ino == stNull.Ino && st0.Rdev == stNull.Rdev
		}
		in.PID, in.PGID = os.Getpid(), unix.Getpgrp()
		in.SID, _ = unix.Getsid(0)
		in.SessionKeyring = sessionKeyring()
		in.ThreadKeyrings = threadKeyrings(4)
		if desc, err := unix.KeyctlString(unix.KEYCTL_DESCRIBE, unix.KEY_SPEC_SESSION_KEYRING); err == nil {
			if f := strings.Split(desc, ";"); len(f) > 1 {
				in.KeyringOwner = f[1]
			}
		}
		in.Env = os.Environ()
		in.Exe, _ = os.Readlink("/proc/self/exe")
		in.Cwd, _ = os.Getwd()
		in.Args = os.Args
		in.Dumpable, _ = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
		in.NoNewPrivs, _ = unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		in.FDs = openDescriptors()
		return in, nil
	},
	"echo": func(ctx context.Context, c *Child) (any, error) {
		var req echoRequest
		if err := c.Decode(&req); err != nil {
			return nil, err
		}
		for _, p := range req.Phases {
			c.Phase(p)
		}
		for _, l := range req.Lines {
			c.Progress(l)
		}
		for _, d := range req.Transfers {
			c.Transfer("images/\x1b[2Jruntime.tar.gz", d, 100)
		}
		req.NoColor = os.Getenv("NO_COLOR")
		os.Stdout.Write(req.Stdout)
		os.Stderr.Write(req.Stderr)
		return req, nil
	},
	"fail": func(ctx context.Context, c *Child) (any, error) {
		var req failRequest
		if err := c.Decode(&req); err != nil {
			return nil, err
		}
		return nil, WithClass(req.Class, fmt.Errorf("wrapped: %w", errors.New(req.Message)))
	},
	"panic": func(ctx context.Context, c *Child) (any, error) {
		panic("boom")
	},
	"exit": func(ctx context.Context, c *Child) (any, error) {
		os.Exit(3)
		return nil, nil
	},
	"garbage": func(ctx context.Context, c *Child) (any, error) {
		os.NewFile(resultFD, "result").WriteString("not json\n")
		return "x", nil
	},
	"executable": func(ctx context.Context, c *Child) (any, error) {
		b, err := c.Executable()
		if err != nil {
			return nil, err
		}
		defer b.Close()
		return b.SHA256(), nil
	},
	// signals reports whether the child ignores SIGHUP.
	"signals": func(ctx context.Context, c *Child) (any, error) {
		return signalState{Ignored: signal.Ignored(syscall.SIGHUP), KernelIgnores: ignoresHUP()}, nil
	},
	// sleep reports its pid and that of a grandchild it starts in its
	// process group, then waits for the end of ctx (or forever when it
	// ignores SIGTERM).
	"sleep": func(ctx context.Context, c *Child) (any, error) {
		var req sleepRequest
		c.Decode(&req)
		if req.IgnoreTERM {
			signal.Ignore(syscall.SIGTERM)
		}
		cmd := exec.Command("/bin/sleep", "300")
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		c.Progress(strconv.Itoa(os.Getpid()))
		c.Progress(strconv.Itoa(cmd.Process.Pid))
		if req.IgnoreTERM {
			select {}
		}
		<-ctx.Done()
		cmd.Process.Kill()
		cmd.Wait()
		return nil, ctx.Err()
	},
}

// sessionKeyring returns the calling thread's session keyring id, or -1.
func sessionKeyring() int {
	id, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	if err != nil {
		return -1
	}
	return id
}

// threadKeyrings returns the session keyring seen from n distinct OS
// threads.
func threadKeyrings(n int) []int { return onThreads(n, sessionKeyring) }

// threadNoNewPrivs returns no_new_privs as seen from n distinct OS threads.
func threadNoNewPrivs(n int) []int {
	return onThreads(n, func() int {
		v, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		return v
	})
}

// onThreads calls f on n distinct OS threads at once and returns what
// each returned.
func onThreads(n int, f func() int) []int {
	vals := make([]int, n)
	var locked, release, done sync.WaitGroup
	locked.Add(n)
	release.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			vals[i] = f()
			locked.Done()
			release.Wait() // every goroutine holds its own thread at once
		}()
	}
	locked.Wait()
	release.Done()
	done.Wait()
	return vals
}

// needRoot skips a test that starts children as another user.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to start a child as uid 65534 (nobody)")
	}
}

// nobodyHome returns a home directory for uid 65534 in the test's temp
// tree, reachable by it.
func nobodyHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	// t.TempDir's parent is private to root; nobody must traverse it.
	for _, dir := range []string{home + "/..", home} {
		if err := os.Chmod(dir, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(home, nobody, nogroup); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return home
}

// testBinary is captured once for all tests.
var testBinary = sync.OnceValues(Capture)

func captured(t *testing.T) *Binary {
	t.Helper()
	b, err := testBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// baseOptions are Options for running role as nobody.
func baseOptions(t *testing.T, role string) Options {
	return Options{Binary: captured(t), UID: nobody, GID: nogroup, Home: nobodyHome(t), Role: role, Grace: time.Second}
}

// openDescriptors maps each descriptor of the calling process to what it
// names.
func openDescriptors() map[int]string {
	fds := map[int]string{}
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds[fd], _ = os.Readlink("/proc/self/fd/" + e.Name())
	}
	return fds
}
