package treetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
)

// Options says what a snapshot records of each entry besides its type,
// permission bits, size, content hash, link target and device number.
type Options struct {
	// Owner records the entry's uid:gid.
	Owner bool
	// MTime records the modification time.
	MTime bool
	// Times records the inode, the modification and the change time:
	// any write, chmod, chown or replacement shows.
	Times bool
	// Skip leaves out an entry, and everything below a directory, for
	// which it returns true (given the walked path).
	Skip func(path string) bool
}

// Tree maps a path to the description of what is there.
type Tree map[string]string

// Snapshot describes every entry below dir, dir itself included as ".",
// keyed by its path relative to dir. It fails the test when dir cannot be
// read.
func Snapshot(t testing.TB, dir string, o Options) Tree {
	t.Helper()
	s, err := Read(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// SnapshotPaths describes every entry below each of dirs, keyed by the
// entry's path (dir joined with its path below dir).
func SnapshotPaths(t testing.TB, o Options, dirs ...string) Tree {
	t.Helper()
	out := Tree{}
	for _, dir := range dirs {
		s, err := Read(dir, o)
		if err != nil {
			t.Fatal(err)
		}
		for rel, v := range s {
			out[filepath.Join(dir, rel)] = v
		}
	}
	return out
}

// Read is Snapshot returning its error: dir (a directory or a single
// file) missing is an error satisfying errors.Is(err, fs.ErrNotExist).
func Read(dir string, o Options) (Tree, error) {
	s := Tree{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if o.Skip != nil && o.Skip(p) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		desc, err := Describe(p, o)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		s[rel] = desc
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", dir, err)
	}
	return s, nil
}

// Describe is the description of the entry at p (not followed when a
// symbolic link).
func Describe(p string, o Options) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	st := fi.Sys().(*syscall.Stat_t)
	var b strings.Builder
	b.WriteString(fi.Mode().String())
	if o.Owner {
		fmt.Fprintf(&b, " %d:%d", st.Uid, st.Gid)
	}
	switch m := fi.Mode(); {
	case m.IsRegular():
		data, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(&b, " %d %s", fi.Size(), hex.EncodeToString(sum[:]))
	case m&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		b.WriteString(" -> " + target)
	case m&fs.ModeDevice != 0:
		fmt.Fprintf(&b, " rdev %d", st.Rdev)
	}
	if o.Times {
		fmt.Fprintf(&b, " ino %d mtime %d.%09d ctime %d.%09d", st.Ino, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
	} else if o.MTime {
		fmt.Fprintf(&b, " mtime %d.%09d", st.Mtim.Sec, st.Mtim.Nsec)
	}
	return b.String(), nil
}

// Diff lists what differs from before to after, one line per path,
// sorted: "p: was X, now Y", "p: was X, now gone", "p: new, Y". It is ""
// when the snapshots are equal.
func Diff(before, after Tree) string { return strings.Join(DiffLines(before, after), "\n") }

// DiffLines is Diff's lines.
func DiffLines(before, after Tree) []string {
	var out []string
	for p, was := range before {
		if now, ok := after[p]; !ok {
			out = append(out, fmt.Sprintf("%s: was %s, now gone", p, was))
		} else if now != was {
			out = append(out, fmt.Sprintf("%s: was %s, now %s", p, was, now))
		}
	}
	for p, now := range after {
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("%s: new, %s", p, now))
		}
	}
	sort.Strings(out)
	return out
}

// Copy copies the directories, regular files and symbolic links below src
// into dst (made when missing) with their permission bits; any other kind
// of entry fails the test. Owners and times are not copied.
func Copy(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch m := fi.Mode(); {
		case m.IsDir():
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			return os.Chmod(target, m.Perm())
		case m.IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, data, m.Perm()); err != nil {
				return err
			}
			return os.Chmod(target, m.Perm())
		case m&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		}
		return fmt.Errorf("cannot copy %s: %v", p, fi.Mode())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// WithoutTimes is a description with the times (and inode) Options.MTime
// and Options.Times record left out.
func WithoutTimes(desc string) string {
	if i := strings.Index(desc, " ino "); i >= 0 {
		return desc[:i]
	}
	if i := strings.Index(desc, " mtime "); i >= 0 {
		return desc[:i]
	}
	return desc
}
