package lease

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Lease is an open, validated generation lease. It holds the lease file
// open (close-on-exec) and the generations directory it was opened in. Close
// releases whatever lock this descriptor holds; only an exclusive lock is
// unlocked explicitly, never a shared one held for a helper.
type Lease struct {
	dir      *safefile.Root
	uid      int // the node account, owner of the directory and its files
	file     *os.File
	identity LeaseIdentity
	gen      int64
	// exclusive is set once TryExclusive took the lock through file.
	exclusive bool
}

// Path is the lease file's path.
func (l *Lease) Path() string { return l.dir.Join(leaseName(l.gen)) }

// Identity is the validated identity record.
func (l *Lease) Identity() LeaseIdentity { return l.identity }

// Close closes the lease descriptor (dropping a lock held through it) and
// the directory.
//
// An exclusive lock (TryExclusive's) is released with LOCK_UN first: a
// process forked meanwhile by another goroutine holds a copy of the
// descriptor until it executes its program, and the close alone would leave
// the lock held through that copy. A shared lock held for a helper is never
// unlocked: the helper inherited the same open file description on purpose.
func (l *Lease) Close() error {
	if l.exclusive {
		unix.Flock(int(l.file.Fd()), unix.LOCK_UN)
		l.exclusive = false
	}
	err := l.file.Close()
	if derr := l.dir.Close(); err == nil {
		err = derr
	}
	return err
}

// Initialize creates the lease of generation id.Generation in dir (the
// node's state/node/generations, owned by uid) and publishes its identity:
//
//  1. <g>.lease is created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600, and
//     fsynced;
//  2. <g>.lease-identity, binding id to the lease's device and inode, is
//     written to a temporary .generation-* file, fsynced, linked into place
//     without replacing anything, and the directory fsynced.
//
// Only after it returns may a helper for the generation start. A crash
// between the two steps leaves a lease without identity: Open then refuses
// with ErrIdentityMissing and Initialize with ErrLeaseExists, forever. An
// existing lease is never touched (ErrLeaseExists); an identity record
// without its lease refuses with ErrLeaseMissing. The returned lease is open
// and unlocked; the caller closes it.
func Initialize(dir string, id Identity, uid int) (*Lease, error) {
	if err := id.Validate(); err != nil {
		return nil, err
	}
	d, err := openDir(dir, uid)
	if err != nil {
		return nil, err
	}
	l, err := initialize(d, uid, id)
	if err != nil {
		d.Close()
		return nil, err
	}
	return l, nil
}

func initialize(d *safefile.Root, uid int, id Identity) (*Lease, error) {
	name, idName := leaseName(id.Generation), identityName(id.Generation)
	path := d.Join(name)
	if ok, err := d.Exists(idName); err != nil {
		return nil, err
	} else if ok {
		if lok, _ := d.Exists(name); lok {
			return nil, refuse(path, "create", ErrLeaseExists, "the lease and its identity exist; it is never re-created")
		}
		return nil, refuse(path, "create", ErrLeaseMissing, "identity record %s exists without its lease; the lease is never re-created", d.Join(idName))
	}
	f, err := d.CreateNew(name, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, &CheckError{Path: path, Check: "create", Detail: "the existing file is kept untouched", Err: ErrLeaseExists}
		}
		return nil, fmt.Errorf("create lease: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("stat lease %s: %w", path, err)
	}
	// Crash point: a lease without identity; resume must refuse it.
	safefile.Failpoint("lease-created")
	rec := LeaseIdentity{Identity: id, Device: st.Dev, Inode: st.Ino}
	data, err := marshalLeaseIdentity(rec)
	if err == nil {
		err = d.Write(idName, data, 0o600, recordWrite(true))
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("publish identity of lease %s: %w", path, err)
	}
	safefile.Failpoint("lease-identity-published")
	return &Lease{dir: d, uid: uid, file: f, identity: rec, gen: id.Generation}, nil
}

// Open opens the lease of want.Generation in dir and validates it fully:
// the directory (owner uid, not group/other-writable), the lease (no link,
// one link, owner uid, mode 0600, regular, opened without blocking), the
// identity record (the same checks, at most 4096 bytes, exact key set),
// identity equal to want, the record's device and inode equal to the
// opened lease, and the lease path still naming that inode. The returned
// lease is unlocked; the caller closes it.
func Open(dir string, want Identity, uid int) (*Lease, error) {
	if err := want.Validate(); err != nil {
		return nil, err
	}
	d, err := openDir(dir, uid)
	if err != nil {
		return nil, err
	}
	l, err := open(d, uid, want)
	if err != nil {
		d.Close()
		return nil, err
	}
	return l, nil
}

func open(d *safefile.Root, uid int, want Identity) (*Lease, error) {
	name := leaseName(want.Generation)
	path := d.Join(name)
	f, err := d.OpenFile(name, private(uid, 0))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, refuse(path, "lease", ErrLeaseMissing, "")
		}
		return nil, fmt.Errorf("open lease: %w", err)
	}
	l := &Lease{dir: d, uid: uid, file: f, gen: want.Generation}
	if err := l.validate(want); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// validate checks the open lease against its identity record and want, and
// that the path still names the open inode. It reads the record again on
// every call.
func (l *Lease) validate(want Identity) error {
	path := l.Path()
	var st unix.Stat_t
	if err := unix.Fstat(int(l.file.Fd()), &st); err != nil {
		return fmt.Errorf("stat lease %s: %w", path, err)
	}
	if st.Nlink == 0 {
		return refuse(path, "inode", ErrInodeReplaced, "the opened lease was unlinked or replaced")
	}
	if err := safefile.Check(path, &st, private(l.uid, 0)); err != nil {
		return err
	}
	rec, err := readLeaseIdentity(l.dir, l.uid, l.gen)
	if err != nil {
		return err
	}
	if rec.Identity != want {
		return refuse(path, "identity", ErrIdentityMismatch, "%s", describeDiff(rec.Identity, want))
	}
	if rec.Device != st.Dev || rec.Inode != st.Ino {
		return refuse(path, "inode", ErrInodeReplaced, "identity names device %d inode %d, the lease is device %d inode %d", rec.Device, rec.Inode, st.Dev, st.Ino)
	}
	dev, ino, err := l.dir.FileID(leaseName(l.gen))
	if errors.Is(err, os.ErrNotExist) {
		return refuse(path, "inode", ErrInodeReplaced, "the path was removed after it was opened")
	}
	if err != nil {
		return err
	}
	if dev != st.Dev || ino != st.Ino {
		return refuse(path, "inode", ErrInodeReplaced, "the path names inode %d, opened %d", ino, st.Ino)
	}
	l.identity = rec
	return nil
}

func describeDiff(got, want Identity) string {
	switch {
	case got.InstallationID != want.InstallationID:
		return fmt.Sprintf("record names installation %s, expected %s", got.InstallationID, want.InstallationID)
	case got.Generation != want.Generation:
		return fmt.Sprintf("record names generation %d, expected %d", got.Generation, want.Generation)
	default:
		return fmt.Sprintf("record names specification digest %s, expected %s", got.SpecificationDigest, want.SpecificationDigest)
	}
}

// TryExclusive takes the exclusive lock without waiting (LOCK_EX|LOCK_NB)
// and validates the lease again under it. A lock held by anyone else —
// a native helper's shared lock, another collector or repair — returns
// ErrHelperActive. Repair and collection call it before they inspect
// anything and hold the lease (do not Close it) through all their changes;
// Close releases the lock. On any error the caller closes the lease.
func (l *Lease) TryExclusive() error {
	path := l.Path()
	for {
		err := unix.Flock(int(l.file.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EWOULDBLOCK) {
			return &CheckError{Path: path, Check: "lock", Detail: "another process holds the lease; retry later", Err: ErrHelperActive}
		}
		if err != nil {
			return fmt.Errorf("lock lease %s: %w", path, err)
		}
		break
	}
	l.exclusive = true
	// Between Open and the lock the path may have been replaced.
	if err := l.validate(l.identity.Identity); err != nil {
		return err
	}
	return nil
}
