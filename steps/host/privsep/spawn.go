package privsep

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// child is one started child process: its pipes, and the goroutines that
// relay its output and read its messages.
type child struct {
	role   string
	cmd    *exec.Cmd
	pid    int
	p      *pipes
	exited chan struct{}
	grace  time.Duration
	// wg counts the relays, the message reader and the request writer.
	wg sync.WaitGroup
}

// spawn starts the child for o (validated) and the goroutines that relay
// its stdout and stderr to o.Output and feed its messages to rd. The
// caller writes the envelope and ends with finish.
func spawn(o Options, rd *reader) (_ *child, err error) {
	p, err := openPipes(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Role, err)
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	execFD, err := p.execFD(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", o.Role, err)
	}
	defer unix.Close(execFD)

	cred := &syscall.Credential{Uid: uint32(o.UID), Gid: uint32(o.GID), Groups: make([]uint32, 0, len(o.Groups))}
	for _, g := range o.Groups {
		cred.Groups = append(cred.Groups, uint32(g))
	}
	// The child works in the account's home; without one (removed by
	// hand, or an install stopped before making it) in /, so that the
	// command can still say what is missing or make the home again. HOME
	// names the home either way.
	dir := o.Home
	if _, err := os.Lstat(o.Home); errors.Is(err, fs.ErrNotExist) {
		dir = "/"
	}
	cmd := &exec.Cmd{
		// The sealed copy, named through this process's descriptor table:
		// the forked child resolves /proc/self/fd/N before execve closes N.
		Path:       fmt.Sprintf("/proc/self/fd/%d", execFD),
		Args:       []string{memfdName, ChildCommand, o.Role},
		Env:        o.env(),
		Dir:        dir,
		Stdin:      p.devNull,
		Stdout:     p.outW,
		Stderr:     p.errW,
		ExtraFiles: []*os.File{p.resW, p.reqR, p.exe}, // fd 3, 4 and 5
		SysProcAttr: &syscall.SysProcAttr{
			Credential: cred,
			Setsid:     true,
			Pdeathsig:  syscall.SIGKILL,
		},
	}

	// The child is forked from a thread of its own (childThread): the
	// parent death signal is tied to the OS thread that forks, and that
	// thread also carries what the child must start with (a new session
	// keyring of the account's, no new privileges). The goroutine keeps
	// the thread locked until the child has exited and never unlocks it,
	// so the runtime ends the thread with the goroutine and no other
	// goroutine of root ever runs with those settings.
	started := make(chan error, 1)
	c := &child{role: o.Role, cmd: cmd, p: p, exited: make(chan struct{}), grace: o.grace()}
	go func() {
		runtime.LockOSThread()
		if err := prepareChildThread(o.UID, o.GID); err != nil {
			started <- err
			return
		}
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waitExited(cmd.Process.Pid)
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s as %s: %w", o.Role, AccountName, err)
	}
	c.pid = cmd.Process.Pid
	p.closeChildEnds()

	output := o.Output
	if output == nil {
		output = io.Discard
	}
	out := &lockedWriter{w: output}
	c.wg.Add(3)
	go func() { defer c.wg.Done(); relay(out, p.outR) }()
	go func() { defer c.wg.Done(); relay(out, p.errR) }()
	go func() { defer c.wg.Done(); rd.read(p.resR) }()
	return c, nil
}

// finish ends the child: with interrupted, SIGTERM to its group and, after
// the grace period, SIGKILL; then whatever is left of the group goes, the
// child is reaped and the pipes drained. It returns how the child ended;
// no process of the child's group is left running.
func (c *child) finish(interrupted bool) *os.ProcessState {
	if interrupted {
		stopGroup(c.pid, c.exited, c.grace)
	}
	// Whatever is left of the group goes too. The child is exited (or
	// killed) but not yet reaped, so its pid, the group's id, cannot name
	// another group.
	unix.Kill(-c.pid, unix.SIGKILL)
	c.cmd.Wait()
	waitGroupGone(c.pid)

	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainDelay):
		// A process outside the group still holds a pipe: stop reading.
		c.p.closeParentEnds()
		<-done
	}
	c.p.close()
	return c.cmd.ProcessState
}

// prepareChildThread is childThread; a test replaces it to start a child
// the way a careless parent would.
var prepareChildThread = childThread

// waitExited blocks until the child pid has exited, leaving it unreaped
// (WNOWAIT) so that its pid stays reserved while Run signals its group.
func waitExited(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// stopGroup sends SIGTERM to the child's process group, waits up to grace
// for the child to exit and the group to empty, then sends SIGKILL and
// waits for the child to exit.
func stopGroup(pid int, exited <-chan struct{}, grace time.Duration) {
	unix.Kill(-pid, unix.SIGTERM)
	deadline := time.NewTimer(grace)
	defer deadline.Stop()
	select {
	case <-exited:
		// The group may still hold processes the child started.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for unix.Kill(-pid, 0) == nil {
			select {
			case <-tick.C:
			case <-deadline.C:
				unix.Kill(-pid, unix.SIGKILL)
				return
			}
		}
	case <-deadline.C:
		unix.Kill(-pid, unix.SIGKILL)
		<-exited
	}
}

// groupGoneDelay bounds how long Run waits for killed processes of the
// group to finish dying. A killed process runs no more code of its own, but
// leaves only once the kernel has scheduled its exit; and an orphan whose
// exit nobody reaps (a container whose init does not reap) never leaves.
const groupGoneDelay = time.Second

// waitGroupGone waits until no process is left in group pgid, or
// groupGoneDelay has passed. Called after the group leader was reaped:
// while any member is left, the kernel keeps the group's id from naming a
// new process, and signal 0 sends nothing to whatever it names.
func waitGroupGone(pgid int) {
	deadline := time.Now().Add(groupGoneDelay)
	for unix.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
}
