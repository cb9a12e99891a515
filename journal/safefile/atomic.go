package safefile

import (
	"errors"
	"fmt"
	"os"
	"path"

	"golang.org/x/sys/unix"
)

// AtomicWrite replaces rel with data: the temporary file "."+base+".tmp" in
// the same directory (one an interrupted run left is removed first) is
// created with O_EXCL, written, given perm, fsynced and closed, renamed over
// rel, and the directory fsynced. Every name is resolved under the root.
// Readers see the old or the new contents, never a mix; after return the
// new contents are durable. No temporary file is left on failure before
// the rename. Callers serialize writes of one path.
func (r *Root) AtomicWrite(rel string, data []byte, perm os.FileMode) error {
	return r.AtomicWriteTemp(rel, "", data, perm)
}

// AtomicWriteTemp is AtomicWrite with the temporary file named prefix+base
// (for example ".generation-" gives ".generation-3.lease-identity"), for
// formats whose readers know their temporary files. An empty prefix means
// the temporary file "."+base+".tmp".
func (r *Root) AtomicWriteTemp(rel, prefix string, data []byte, perm os.FileMode) error {
	return r.Write(rel, data, perm, WriteOptions{Temp: prefix})
}

// WriteOptions say how Write names its temporary file and failpoints and
// whether it may replace an existing file.
type WriteOptions struct {
	// Temp is the temporary file's prefix (prefix+base); "" means
	// "."+base+".tmp".
	Temp string
	// Point, when set, is the one failpoint of the write, passed after the
	// temporary file is durable and before it is renamed into place, for
	// formats whose crash tests name their points; otherwise the layer's
	// own points are passed.
	Point string
	// NoReplace links the file into place only if rel is absent (write
	// once); an existing rel reports os.ErrExist and is left untouched.
	NoReplace bool
	// NoPoints passes no failpoint at all, for a file whose loss costs
	// nothing but time (a download's validator).
	NoPoints bool
}

// Write is the one write of a whole file under the root: the temporary
// file (see WriteOptions) is created with O_EXCL after removing one an
// interrupted run left, written, given perm, fsynced and closed, renamed
// over rel (or, with NoReplace, linked into place without replacing
// anything), and the directory fsynced. No temporary file is left on
// failure. Callers serialize writes of one path.
func (r *Root) Write(rel string, data []byte, perm os.FileMode, o WriteOptions) error {
	full := r.Join(rel)
	op := "write"
	if o.NoReplace {
		op = "publish"
	}
	dirfd, base, err := r.parent(rel)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, full, err)
	}
	defer unix.Close(dirfd)
	tmp := tempName(o.Temp, base)
	points := !o.NoPoints && o.Point == ""
	if err := writeTempAt(dirfd, path.Dir(full), tmp, data, perm, points); err != nil {
		return fmt.Errorf("%s %s: %w", op, full, err)
	}
	if !o.NoPoints && o.Point != "" {
		Failpoint(o.Point)
	}
	if o.NoReplace {
		if beforeLink != nil {
			beforeLink()
		}
		err = renameNoReplace(dirfd, tmp, base)
		unix.Unlinkat(dirfd, tmp, 0) // gone after a rename; the link's source otherwise
		if err != nil {
			return &os.PathError{Op: op, Path: full, Err: err}
		}
		if points {
			Failpoint("publish-after-link")
		}
	} else {
		if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
			unix.Unlinkat(dirfd, tmp, 0)
			return fmt.Errorf("%s %s: %w", op, full, err)
		}
		if points {
			Failpoint("atomic-after-rename")
		}
	}
	if err := fsync(dirfd, path.Dir(full)); err != nil {
		return fmt.Errorf("%s %s: sync directory: %w", op, full, err)
	}
	return nil
}

// AtomicWrite is Root.AtomicWrite for a path (see openParent).
func AtomicWrite(p string, data []byte, perm os.FileMode) error {
	r, base, err := openParent(p)
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	defer r.Close()
	return r.AtomicWrite(base, data, perm)
}

// tempName is the one temporary file name used for publishing base. It is
// fixed so that a run interrupted between creating it and renaming it
// leaves at most one file behind, which the next write of the same name
// removes.
func tempName(prefix, base string) string {
	if prefix == "" {
		return "." + base + ".tmp"
	}
	return prefix + base
}

// writeTempAt writes data to the private temporary file name in dirfd
// (removing one an interrupted run left, then O_EXCL|O_NOFOLLOW), sets
// perm, and fsyncs and closes it. On error no temporary file is left. dir
// names dirfd for the crashtest record; points says whether the layer's
// failpoint is passed.
func writeTempAt(dirfd int, dir, name string, data []byte, perm os.FileMode, points bool) error {
	if err := unix.Unlinkat(dirfd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("remove temporary file %s: %w", name, err)
	}
	fd, err := unix.Openat(dirfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create temporary file %s: %w", name, err)
	}
	err = func() error {
		for rest := data; len(rest) > 0; {
			n, err := unix.Write(fd, rest)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return err
			}
			rest = rest[n:]
		}
		if err := unix.Fchmod(fd, unixMode(perm)); err != nil {
			return err
		}
		if points {
			Failpoint("atomic-before-sync")
		}
		return fsync(fd, path.Join(dir, name))
	}()
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(dirfd, name, 0)
		return fmt.Errorf("write temporary file %s: %w", name, err)
	}
	return nil
}
