package lease

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// HelperRef is a generation lease held with a shared lock for one native
// helper. The helper inherits the descriptor (Attach); the lock then lives
// as long as the helper or any of our copies holds the open file
// description. Our copy is closed by Release only after the helper's Wait
// returned; the shared lock is never explicitly unlocked.
type HelperRef struct {
	lease *Lease
}

// File is the lease descriptor the helper inherits. It is close-on-exec in
// this process, so no other child inherits it.
func (r *HelperRef) File() *os.File { return r.lease.file }

// Lease is the validated lease under the shared lock.
func (r *HelperRef) Lease() *Lease { return r.lease }

// Release closes our copy of the descriptor. Call it only after the
// helper's cmd.Wait returned (or when no helper was started): a live helper
// keeps the shared lock through its inherited copy.
func (r *HelperRef) Release() error { return r.lease.Close() }

// Attach adds the lease descriptor to cmd.ExtraFiles and returns the
// descriptor number the helper sees (3 + its index), to be passed to the
// helper before cmd.Start. Only this descriptor is inherited: every other
// descriptor of the process is close-on-exec.
func (r *HelperRef) Attach(cmd *exec.Cmd) int {
	cmd.ExtraFiles = append(cmd.ExtraFiles, r.lease.file)
	return 2 + len(cmd.ExtraFiles)
}

// StartHelper attaches the lease (see Attach) and starts cmd. If the start
// fails, no process holds the descriptor and our copy is released.
func StartHelper(r *HelperRef, cmd *exec.Cmd) error {
	r.Attach(cmd)
	if err := cmd.Start(); err != nil {
		r.Release()
		return fmt.Errorf("start helper for %s: %w", r.lease.Path(), err)
	}
	return nil
}

// WaitHelper waits for the helper started with StartHelper and only then
// releases our copy of the lease. A canceled caller must still call it: the
// helper counts as running until its Wait returns.
func WaitHelper(r *HelperRef, cmd *exec.Cmd) error {
	err := cmd.Wait()
	if rerr := r.Release(); rerr != nil && err == nil {
		err = fmt.Errorf("release lease %s: %w", r.lease.Path(), rerr)
	}
	return err
}

// AdoptInherited is for the helper side: it marks the inherited lease
// descriptor fd close-on-exec, so the VMs and daemons the helper starts do
// not inherit the lease, and returns it as a file. The helper keeps it open
// until it exits.
func AdoptInherited(fd uintptr, name string) (*os.File, error) {
	if _, err := unix.FcntlInt(fd, unix.F_SETFD, unix.FD_CLOEXEC); err != nil {
		return nil, fmt.Errorf("inherited lease descriptor %d: %w", fd, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(fd), &st); err != nil {
		return nil, fmt.Errorf("inherited lease descriptor %d: %w", fd, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, &safefile.UnsafeError{Path: name, Err: safefile.ErrNotRegular,
			Detail: fmt.Sprintf("inherited descriptor %d is a %s", fd, safefile.FileType(st.Mode))}
	}
	return os.NewFile(fd, name), nil
}

// lockPoll is how often AcquireForHelper retries a busy shared lock.
const lockPoll = 50 * time.Millisecond

// AcquireForHelper prepares the start of a native helper for generation
// want.Generation. It opens and validates the lease (see Open), takes the
// shared lock (waiting while a collector or repair holds it exclusively,
// until ctx is done), and under the lock validates the identity again,
// requires that no <g>.preparing, <g>.collecting or <g>.dropped exists (in
// any form; ErrGenerationBusy) and runs finalConfig, which must prove that
// the generation's final provider configuration is published. A nil
// finalConfig means RequireFinalConfig(dir, want, uid): <g>.json. The base
// generation, whose configuration is the node root's provider.json, passes
// its own check.
//
// On success the caller attaches the returned ref to the helper (Attach or
// StartHelper), waits for it and then calls Release (or WaitHelper). On
// error nothing is held.
func AcquireForHelper(ctx context.Context, dir string, want Identity, uid int, finalConfig func() error) (*HelperRef, error) {
	if finalConfig == nil {
		finalConfig = RequireFinalConfig(dir, want, uid)
	}
	l, err := Open(dir, want, uid)
	if err != nil {
		return nil, err
	}
	if err := acquireShared(ctx, l, want, finalConfig); err != nil {
		l.Close()
		return nil, err
	}
	return &HelperRef{lease: l}, nil
}

func acquireShared(ctx context.Context, l *Lease, want Identity, finalConfig func() error) error {
	fd := int(l.file.Fd())
	for {
		err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("lock lease %s shared: %w", l.Path(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lock lease %s shared: held exclusively by a collector or repair: %w", l.Path(), context.Cause(ctx))
		case <-time.After(lockPoll):
		}
	}
	if err := l.validate(want); err != nil {
		return err
	}
	for _, name := range []string{preparingName(want.Generation), collectName(want.Generation), droppedName(want.Generation)} {
		ok, err := l.dir.Exists(name)
		if err != nil {
			return err
		}
		if ok {
			return refuse(l.dir.Join(name), "records", ErrGenerationBusy, "a helper cannot start while this record exists")
		}
	}
	if err := finalConfig(); err != nil {
		return fmt.Errorf("final configuration of generation %d: %w", want.Generation, err)
	}
	return nil
}

// RequireFinalConfig returns a check that <g>.json in dir is published: a
// private regular file (the same checks as every record, at most 1 MiB)
// holding a JSON object whose installation_id and generation equal want.
// Its other keys are the provider configuration's and not checked here.
func RequireFinalConfig(dir string, want Identity, uid int) func() error {
	return func() error {
		d, err := openDir(dir, uid)
		if err != nil {
			return err
		}
		defer d.Close()
		name := finalName(want.Generation)
		data, err := d.ReadFile(name, private(uid, maxFinalConfig))
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return refuse(d.Join(name), "records", ErrGenerationBusy, "the final configuration is not published")
			}
			return err
		}
		var head struct {
			InstallationID ident.InstallationID `json:"installation_id"`
			Generation     int64                `json:"generation"`
		}
		if err := finalHeadFormat.Decode(data, &head); err != nil {
			return refuse(d.Join(name), "format", ErrMalformed, "not a provider configuration with installation_id and generation: %v", err)
		}
		if head.InstallationID != want.InstallationID || head.Generation != want.Generation {
			return refuse(d.Join(name), "identity", ErrIdentityMismatch, "configuration names installation %s generation %d", truncate(string(head.InstallationID)), head.Generation)
		}
		return nil
	}
}
