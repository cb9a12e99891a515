package safefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// PublishOnce publishes data at rel exactly once. A new file is written and
// made durable like AtomicWrite but linked into place without replacing
// anything (renameat2 RENAME_NOREPLACE, or link(2) where the file system
// lacks it). If rel already exists with the same bytes, PublishOnce fsyncs
// it and its directory (it may not be durable yet) and succeeds; with
// different bytes it returns a *ConflictError. An existing file is
// compared only if it is a regular file with one link, owned by the
// effective uid and of mode perm; otherwise it is refused as unsafe. The
// temporary file is "."+base+".tmp"; callers serialize publishers of one
// path.
func (r *Root) PublishOnce(rel string, data []byte, perm os.FileMode) error {
	return r.publishOnce(rel, data, perm, int64(len(data)), func(got []byte) bool { return bytes.Equal(got, data) })
}

// PublishOnceSame is PublishOnce for a record that may exist in another
// layout: an existing file of at most max bytes for which same reports true
// holds what data holds, is left as it is (made durable) and is success;
// anything else is a *ConflictError. Callers pass a comparison of decoded
// values (strictjson.Format.Same for a JSON record).
func (r *Root) PublishOnceSame(rel string, data []byte, perm os.FileMode, max int64, same func(got []byte) bool) error {
	return r.publishOnce(rel, data, perm, max, same)
}

func (r *Root) publishOnce(rel string, data []byte, perm os.FileMode, max int64, same func([]byte) bool) error {
	full := r.Join(rel)
	exp := Expect{UID: os.Geteuid(), Mode: perm}
	err := r.sameDurable(rel, max, same, exp)
	if !errors.Is(err, os.ErrNotExist) {
		if err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("publish %s: %w", full, err)
		}
		return err
	}
	err = r.CreateOnce(rel, "", data, perm)
	if errors.Is(err, os.ErrExist) {
		// Someone published first: equal bytes are success, others a
		// conflict.
		if err = r.sameDurable(rel, max, same, exp); err != nil && !errors.Is(err, ErrConflict) {
			return fmt.Errorf("publish %s: %w", full, err)
		}
	}
	return err
}

// PublishOnce is Root.PublishOnce for a path (see openParent).
func PublishOnce(p string, data []byte, perm os.FileMode) error {
	r, base, err := openParent(p)
	if err != nil {
		return fmt.Errorf("publish %s: %w", p, err)
	}
	defer r.Close()
	return r.PublishOnce(base, data, perm)
}

// CreateOnce writes data as the new file rel: the temporary file
// prefix+base ("."+base+".tmp" for an empty prefix) is written, given perm
// and fsynced, linked into place without replacing anything, and the
// directory fsynced. An existing rel reports an error matching os.ErrExist
// and is left untouched; the caller decides whether what is there is
// acceptable, and makes it durable (Durable) before relying on it.
func (r *Root) CreateOnce(rel, prefix string, data []byte, perm os.FileMode) error {
	return r.Write(rel, data, perm, WriteOptions{Temp: prefix, NoReplace: true})
}

// beforeLink runs between writing the temporary file and linking it into
// place; tests use it to publish first from elsewhere.
var beforeLink func()

// renameNoReplace moves from to to in dirfd unless to exists (EEXIST):
// renameat2 RENAME_NOREPLACE, or link(2) where the file system lacks it (the
// caller then removes from).
func renameNoReplace(dirfd int, from, to string) error {
	err := unix.Renameat2(dirfd, from, dirfd, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS) {
		err = unix.Linkat(dirfd, from, dirfd, to, 0)
	}
	return err
}

// sameDurable checks that rel passes exp and holds at most max bytes for
// which same reports true, and then makes it and its name durable. A
// missing file reports os.ErrNotExist, other contents a *ConflictError.
func (r *Root) sameDurable(rel string, max int64, same func([]byte) bool, exp Expect) error {
	f, err := r.OpenFile(rel, exp)
	if err != nil {
		return err
	}
	defer f.Close()
	got, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if int64(len(got)) > max || !same(got) {
		return &ConflictError{Path: f.Name()}
	}
	return r.syncOpened(rel, f)
}
