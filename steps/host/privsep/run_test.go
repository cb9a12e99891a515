package privsep

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
	"golang.org/x/sys/unix"
)

func TestRunChildProcessAttributes(t *testing.T) {
	needRoot(t)
	o := baseOptions(t, "inspect")
	o.Groups = []int{nogroup, 100}
	o.Proxy = proxy.FromEnviron([]string{"http_proxy=http://proxy.example:3128", "HTTP_PROXY=http://other.example:1", "NO_PROXY=internal.example", "https_proxy="})
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var in inspection
	if err := res.Decode(&in); err != nil {
		t.Fatal(err)
	}
	if in.UID != nobody || in.EUID != nobody || in.GID != nogroup || in.EGID != nogroup {
		t.Errorf("ids uid %d euid %d gid %d egid %d, want %d:%d", in.UID, in.EUID, in.GID, in.EGID, nobody, nogroup)
	}
	if !sameSet(in.Groups, o.Groups) {
		t.Errorf("groups %v, want %v", in.Groups, o.Groups)
	}
	if in.Umask != 0o077 {
		t.Errorf("umask %#o, want 077", in.Umask)
	}
	if !in.StdinIsDevNull || in.Stdin != os.DevNull {
		t.Errorf("stdin %q, want %s", in.Stdin, os.DevNull)
	}
	if in.SID != in.PID || in.PGID != in.PID {
		t.Errorf("pid %d sid %d pgid %d: want its own session and group", in.PID, in.SID, in.PGID)
	}
	if in.SessionKeyring <= 0 || in.SessionKeyring == sessionKeyring() {
		t.Errorf("child session keyring %d, parent's %d: want a new one", in.SessionKeyring, sessionKeyring())
	}
	for _, id := range in.ThreadKeyrings {
		if id != in.SessionKeyring {
			t.Errorf("thread session keyrings %v, want all %d", in.ThreadKeyrings, in.SessionKeyring)
			break
		}
	}
	if in.KeyringOwner != strconv.Itoa(nobody) {
		t.Errorf("child session keyring owned by uid %q, want the account's %d", in.KeyringOwner, nobody)
	}
	if in.NoNewPrivs != 1 || in.Dumpable != 0 {
		t.Errorf("child no_new_privs=%d dumpable=%d, want 1 and 0", in.NoNewPrivs, in.Dumpable)
	}
	wantEnv := []string{
		"HOME=" + o.Home, "USER=oac-node", "LOGNAME=oac-node",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "DOCKER_CONFIG=/run/oac-node-docker",
		"http_proxy=http://proxy.example:3128", "HTTP_PROXY=http://proxy.example:3128",
		"https_proxy=", "HTTPS_PROXY=",
		"no_proxy=internal.example", "NO_PROXY=internal.example",
	}
	if !slices.Equal(in.Env, wantEnv) {
		t.Errorf("environment\n got %q\nwant %q", in.Env, wantEnv)
	}
	if !strings.HasPrefix(in.Exe, "/memfd:") {
		t.Errorf("executable %q, want the sealed memfd", in.Exe)
	}
	if in.Cwd != o.Home {
		t.Errorf("working directory %q, want %q", in.Cwd, o.Home)
	}
	wantArgs := []string{"oac-node-install", ChildCommand, "inspect"}
	if !slices.Equal(in.Args, wantArgs) {
		t.Errorf("args %q, want %q", in.Args, wantArgs)
	}
}

func TestRunRelaysSanitizedOutputAndProgress(t *testing.T) {
	needRoot(t)
	o := baseOptions(t, "echo")
	req := echoRequest{
		Stdout: []byte("title \x1b]0;evil\x07 done\n"),
		Stderr: []byte("warn\x9b31m \u0085\n"),
		Phases: []string{"Download \x1b[2Jfiles"},
		Lines:  []string{"40%\r"},
		// Transfers: progress messages, their file name sanitized.
		Transfers: []int64{0, 50, 100},
	}
	o.Request = req
	o.NoColor = true
	var out testhost.Buffer // written by the relays
	o.Output = &out
	var events []Event
	o.Progress = func(e Event) { events = append(events, e) }
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var back echoRequest
	if err := res.Decode(&back); err != nil || !bytes.Equal(back.Stdout, req.Stdout) {
		t.Errorf("result %+v, %v: want the request back", back, err)
	}
	got := out.String()
	for _, want := range []string{"title ?]0;evil? done\n", "warn?31m ?\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("output %q lacks %q", got, want)
		}
	}
	if back.NoColor != "1" {
		t.Errorf("the child's NO_COLOR is %q, want 1 with NoColor", back.NoColor)
	}
	name := "images/?[2Jruntime.tar.gz"
	wantEvents := []Event{{Kind: EventPhase, Text: "Download ?[2Jfiles"}, {Kind: EventLine, Text: "40%?"},
		{Kind: EventTransfer, Text: name, Done: 0, Total: 100}, {Kind: EventTransfer, Text: name, Done: 50, Total: 100},
		{Kind: EventTransfer, Text: name, Done: 100, Total: 100}}
	if !slices.Equal(events, wantEvents) {
		t.Errorf("events %+v, want %+v", events, wantEvents)
	}
}

func TestRunChildErrors(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name, role string
		request    any
		wantIs     error
		wantClass  string
	}{
		{name: "transfer", role: "fail", request: failRequest{ClassTransfer, "download runtime.tar.gz: HTTP 503"}, wantClass: ClassTransfer},
		{name: "refused", role: "fail", request: failRequest{ClassRefused, "registered.json differs \x1b[1m"}, wantClass: ClassRefused},
		{name: "unknown class is internal", role: "fail", request: failRequest{"other", "x"}, wantClass: ClassInternal},
		{name: "panic", role: "panic", wantClass: ClassInternal},
		{name: "unknown role", role: "no-such-role", wantClass: ClassInternal},
		{name: "bad request", role: "fail", request: map[string]int{"Unknown": 1}, wantClass: ClassInternal},
		{name: "exit without result", role: "exit", wantIs: ErrNoResult},
		{name: "garbage message", role: "garbage", wantIs: ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, tc.role)
			o.Request = tc.request
			_, err := Run(context.Background(), o)
			if tc.wantIs != nil {
				if !errors.Is(err, tc.wantIs) {
					t.Fatalf("error %v, want %v", err, tc.wantIs)
				}
				return
			}
			var ce *ChildError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *ChildError", err)
			}
			if ce.Class() != tc.wantClass || ClassOf(err) != tc.wantClass {
				t.Errorf("class %q, want %q", ce.Class(), tc.wantClass)
			}
			if strings.ContainsRune(ce.Message, 0x1b) {
				t.Errorf("message %q holds an escape", ce.Message)
			}
		})
	}
}

func TestRunChildWritesCapturedBytes(t *testing.T) {
	needRoot(t)
	o := baseOptions(t, "executable")
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var sum string
	if err := res.Decode(&sum); err != nil || sum != o.Binary.SHA256() {
		t.Errorf("child read %q (%v), want %s", sum, err, o.Binary.SHA256())
	}
}

func TestRunInterrupted(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name       string
		ignoreTERM bool
		signal     bool
		real       bool // a real SIGHUP to this process, caught by Run itself
	}{
		{name: "context cancelled", ignoreTERM: false},
		{name: "SIGTERM, child stops", signal: true},
		{name: "SIGTERM, child ignores it", signal: true, ignoreTERM: true},
		{name: "real SIGHUP to the parent", real: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, "sleep")
			o.Grace = 300 * time.Millisecond
			o.Request = sleepRequest{IgnoreTERM: tc.ignoreTERM}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sigs := make(chan os.Signal, 1)
			if !tc.real {
				o.Signals = sigs
			}
			var mu sync.Mutex
			var pids []int
			o.Progress = func(e Event) {
				pid, _ := strconv.Atoi(e.Text)
				mu.Lock()
				pids = append(pids, pid)
				if len(pids) == 2 {
					switch {
					case tc.real:
						syscall.Kill(os.Getpid(), syscall.SIGHUP)
					case tc.signal:
						sigs <- syscall.SIGTERM
					default:
						cancel()
					}
				}
				mu.Unlock()
			}
			start := time.Now()
			_, err := Run(ctx, o)
			if !errors.Is(err, ErrInterrupted) {
				t.Fatalf("error %v, want ErrInterrupted", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Run took %v", d)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(pids) != 2 {
				t.Fatalf("child reported pids %v", pids)
			}
			if live := liveGroupMembers(pids[0]); len(live) > 0 {
				t.Errorf("process group %d still has %v", pids[0], live)
			}
		})
	}
}

// TestRunChildDiesWithParent SIGKILLs an intermediate parent (the test
// binary running Run) and expects its child to die with it.
func TestRunChildDiesWithParent(t *testing.T) {
	needRoot(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envIntermediate+"="+nobodyHome(t))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("intermediate parent printed no pid; stderr %q", stderr.String())
	}
	child, err := strconv.Atoi(sc.Text())
	if err != nil {
		t.Fatal(err)
	}
	if !alive(child) {
		t.Fatalf("child %d is not running before its parent is killed", child)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) {
		if time.Now().After(deadline) {
			syscall.Kill(-child, syscall.SIGKILL)
			t.Fatalf("child %d still runs after its parent was killed", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The grandchild (sleep) is not covered by the parent death signal;
	// remove it so the test leaves nothing behind.
	syscall.Kill(-child, syscall.SIGKILL)
}

func TestRunRefusesRootAndBadOptions(t *testing.T) {
	b := &Binary{}
	for _, tc := range []struct {
		name   string
		o      Options
		wantIs error
	}{
		{name: "uid 0", o: Options{Binary: b, UID: 0, GID: 5, Home: "/x", Role: "r"}, wantIs: ErrRoot},
		{name: "gid 0", o: Options{Binary: b, UID: 5, GID: 0, Home: "/x", Role: "r"}, wantIs: ErrRoot},
		{name: "no binary", o: Options{UID: 5, GID: 5, Home: "/x", Role: "r"}},
		{name: "relative home", o: Options{Binary: b, UID: 5, GID: 5, Home: "x", Role: "r"}},
		{name: "no role", o: Options{Binary: b, UID: 5, GID: 5, Home: "/x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.o)
			if err == nil || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) {
				t.Errorf("error %v, want %v", err, tc.wantIs)
			}
		})
	}
}

// TestChildCommandNeedsParent runs the hidden command by hand: without the
// parent's pipes it refuses.
func TestChildCommandNeedsParent(t *testing.T) {
	cmd := exec.Command(os.Args[0], ChildCommand, "inspect")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit %v, want status 2; output %q", err, out)
	}
	if !strings.Contains(string(out), "internal") {
		t.Errorf("output %q does not say the command is internal", out)
	}
}

func TestServeChildIgnoresOtherArguments(t *testing.T) {
	for _, args := range [][]string{nil, {}, {"status"}, {"--uninstall", ChildCommand}} {
		if ServeChild(args, testRoles) {
			t.Errorf("ServeChild(%q) handled it", args)
		}
	}
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	state, _, ok := procStat(pid)
	return ok && state != "Z"
}

// liveGroupMembers lists the processes of group pgid that are not zombies.
// Zombies are dead; who reaps an orphan depends on the machine's init.
func liveGroupMembers(pgid int) []int {
	var live []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		state, group, ok := procStat(pid)
		if ok && group == pgid && state != "Z" {
			live = append(live, pid)
		}
	}
	return live
}

// procStat reads a process's state and process group from
// /proc/<pid>/stat.
func procStat(pid int) (state string, pgid int, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return "", 0, false
	}
	// The command name is in parentheses and may hold spaces.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 3 {
		return "", 0, false
	}
	pgid, _ = strconv.Atoi(fields[2])
	return fields[0], pgid, true
}

func TestRunCancelledBeforeStart(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Run(ctx, Options{Binary: &Binary{}, UID: 5, GID: 5, Home: "/nonexistent", Role: "inspect"})
	if !errors.Is(err, ErrInterrupted) {
		t.Errorf("error %v, want ErrInterrupted", err)
	}
}

func TestRunSurvivesFailingOutput(t *testing.T) {
	needRoot(t)
	o := baseOptions(t, "echo")
	// More than a pipe holds, to a writer that always fails.
	o.Request = echoRequest{Stdout: bytes.Repeat([]byte("x"), 1<<20)}
	o.Output = failingWriter{}
	if _, err := Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, errors.New("terminal gone") }

// TestRunLeavesRootsThreadsAlone: the keyring and no_new_privs the child
// starts with are set on the thread that forks it, which ends with the
// child; root's other threads keep root's session keyring and may still
// gain privileges.
func TestRunLeavesRootsThreadsAlone(t *testing.T) {
	needRoot(t)
	before := threadKeyrings(8)
	for range 3 {
		if _, err := Run(context.Background(), baseOptions(t, "inspect")); err != nil {
			t.Fatal(err)
		}
	}
	after := threadKeyrings(8)
	for _, id := range append(before, after...) {
		if id != before[0] {
			t.Fatalf("root's thread session keyrings before %v, after %v: want all %d", before, after, before[0])
		}
	}
	for _, nnp := range threadNoNewPrivs(8) {
		if nnp != 0 {
			t.Fatalf("a thread of root has no_new_privs after Run")
		}
	}
}

// TestChildRefusesRootsKeyring starts a child from a thread that joined a
// session keyring of root's instead of the account's: the child refuses
// before its handler runs.
func TestChildRefusesRootsKeyring(t *testing.T) {
	needRoot(t)
	prepareChildThread = func(uid, gid int) error {
		if _, _, errno := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); errno != 0 {
			return errno
		}
		return forbidNewPrivileges()
	}
	defer func() { prepareChildThread = childThread }()
	_, err := Run(context.Background(), baseOptions(t, "inspect"))
	if err == nil || !strings.Contains(err.Error(), "session keyring") {
		t.Fatalf("child with root's keyring: %v, want a refusal naming the session keyring", err)
	}
}

// TestChildRefusesNewPrivileges starts a child from a thread that may still
// gain privileges: the child refuses.
func TestChildRefusesNewPrivileges(t *testing.T) {
	needRoot(t)
	prepareChildThread = func(uid, gid int) error { return nil }
	defer func() { prepareChildThread = childThread }()
	_, err := Run(context.Background(), baseOptions(t, "inspect"))
	if err == nil || !strings.Contains(err.Error(), "may gain privileges") {
		t.Fatalf("child without no_new_privs: %v, want a refusal", err)
	}
}

// A home that is gone (removed by hand, or never made by an install a
// full /etc stopped) does not keep the child from starting: it works in
// / with HOME still naming the home, so a command can say the home is
// missing, or make it again, instead of failing at fork/exec.
func TestRunWithoutHome(t *testing.T) {
	needRoot(t)
	o := baseOptions(t, "inspect")
	if err := os.Remove(o.Home); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	var in inspection
	if err := res.Decode(&in); err != nil {
		t.Fatal(err)
	}
	if in.Cwd != "/" {
		t.Errorf("working directory %q, want /", in.Cwd)
	}
	if !slices.Contains(in.Env, "HOME="+o.Home) {
		t.Errorf("environment %q, want HOME=%s", in.Env, o.Home)
	}
}
