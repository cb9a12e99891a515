package microsandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"time"
)

// Default limits of a call.
const (
	DefaultQueryTimeout  = 60 * time.Second
	DefaultLoadTimeout   = 1800 * time.Second
	DefaultRemoveTimeout = 120 * time.Second
	maxQueryOutput       = 1 << 20
	maxInventoryOutput   = 8 << 20
	maxStderrExcerpt     = 512
)

// SafePATH is the PATH every msb call gets.
const SafePATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// CLI runs msb for one store. All paths are absolute.
type CLI struct {
	MSB      string // the verified msb executable (also MSB_PATH)
	Store    string // the installation-private store (MSB_HOME and HOME)
	Firmware string // libkrunfw (MSB_LIBKRUNFW_PATH)

	// Timeouts; zero means the package default.
	QueryTimeout  time.Duration
	LoadTimeout   time.Duration
	RemoveTimeout time.Duration

	// Inherit are the lock files the caller holds (flock) for the run whose
	// step calls msb, the installation's install.lock: every msb process
	// inherits them, so that a lock is held until the last process of
	// the call has exited, even when the caller was killed. A rerun then
	// never observes a load or removal still going on. The caller keeps
	// ownership of the files.
	Inherit []*os.File
}

// Env is the complete environment of every msb call.
func (c *CLI) Env() []string {
	return []string{
		"MSB_BACKEND=local",
		"MSB_HOME=" + c.Store,
		"MSB_PATH=" + c.MSB,
		"MSB_LIBKRUNFW_PATH=" + c.Firmware,
		"PATH=" + SafePATH,
		"HOME=" + c.Store,
		"LANG=C.UTF-8",
	}
}

func (c *CLI) check() error {
	for _, p := range []struct{ name, path string }{{"msb", c.MSB}, {"store", c.Store}, {"firmware", c.Firmware}} {
		if !filepath.IsAbs(p.path) || filepath.Clean(p.path) != p.path {
			return fmt.Errorf("microsandbox %s path %q is not a clean absolute path", p.name, p.path)
		}
	}
	return nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// capped keeps at most max bytes and remembers whether more came.
type capped struct {
	buf      bytes.Buffer
	max      int
	overflow bool
}

func (w *capped) Write(p []byte) (int, error) {
	if room := w.max - w.buf.Len(); room < len(p) {
		w.overflow = true
		if room > 0 {
			w.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return w.buf.Write(p)
}

// errOutputTooLarge: msb printed more than the call keeps.
var errOutputTooLarge = errors.New("output exceeds its limit")

// run executes msb args with the fixed environment, standard input from
// /dev/null, in its own process group that is killed when timeout expires
// or ctx ends, and waits for it. It returns standard output, or a
// *CommandError.
//
// msb does not outlive the run that started it: it is killed (SIGKILL,
// the parent death signal) when the calling process dies, and it and every
// process it starts inherit the held locks (Inherit), so that those locks
// stay held until the last of them exits.
func (c *CLI) run(ctx context.Context, timeout time.Duration, maxOut int, args ...string) ([]byte, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.MSB, args...)
	cmd.Env = c.Env()
	cmd.Dir = "/"
	cmd.ExtraFiles = c.Inherit
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdout := &capped{max: maxOut}
	stderr := &capped{max: 4096}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// The parent death signal fires when the thread that forked exits, not
	// only the process: keep this goroutine on its thread until msb has
	// been waited for, so that the runtime never ends that thread earlier.
	runtime.LockOSThread()
	err := cmd.Run()
	runtime.UnlockOSThread()
	fail := func(cause error) error {
		code := -1
		if cmd.ProcessState != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return &CommandError{Args: args, ExitCode: code, Stderr: excerpt(stderr.buf.Bytes()), Err: cause}
	}
	if ctx.Err() != nil {
		return nil, fail(fmt.Errorf("no answer within %s: %w", timeout, ctx.Err()))
	}
	if err != nil {
		return nil, fail(err)
	}
	if stdout.overflow {
		return nil, fail(fmt.Errorf("%w (%d bytes)", errOutputTooLarge, maxOut))
	}
	return stdout.buf.Bytes(), nil
}

// excerpt is the first line of b, printable ASCII only, bounded.
func excerpt(b []byte) string {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		b = b[:i]
	}
	out := make([]byte, 0, min(len(b), maxStderrExcerpt))
	for _, c := range b {
		if len(out) == maxStderrExcerpt {
			break
		}
		if c >= 0x20 && c < 0x7f {
			out = append(out, c)
		} else {
			out = append(out, '?')
		}
	}
	return string(bytes.TrimSpace(out))
}
