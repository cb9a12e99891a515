//go:build crashtest

package powercut

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mount mounts a fresh power-cut file system over a backing directory that
// setup filled (durable from the start), or skips where FUSE is missing.
func mount(t *testing.T, setup func(dir string)) (*FS, string) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skip(err)
	}
	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if setup != nil {
		setup(backing)
	}
	f, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, mnt
}

func write(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fsync opens p (a file or directory) and fsyncs it.
func fsync(t *testing.T, p string) {
	t.Helper()
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Fsync(fd); err != nil {
		t.Fatalf("fsync %s: %v", p, err)
	}
}

func cut(t *testing.T, f *FS) {
	t.Helper()
	if _, err := f.PowerCut(); err != nil {
		t.Fatal(err)
	}
}

// content is a file's content, or "<absent>".
func content(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func ino(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

func old(dir string) {
	os.WriteFile(filepath.Join(dir, "a"), []byte("old"), 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "sub", "b"), []byte("bee"), 0o644)
}

// TestPowerCutRules checks each durability rule with a real fsync and
// without it: what the cut keeps is exactly what was made durable.
func TestPowerCutRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		act  func(t *testing.T, m string)
		want map[string]string // path -> content after the cut
	}{
		{"write without fsync is lost", func(t *testing.T, m string) {
			write(t, filepath.Join(m, "a"), "new")
		}, map[string]string{"a": "old"}},
		{"write with fsync is kept", func(t *testing.T, m string) {
			write(t, filepath.Join(m, "a"), "new")
			fsync(t, filepath.Join(m, "a"))
		}, map[string]string{"a": "new"}},
		{"write with fdatasync is kept", func(t *testing.T, m string) {
			fh, err := os.OpenFile(filepath.Join(m, "a"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			fh.WriteString("+more")
			if err := unix.Fdatasync(int(fh.Fd())); err != nil {
				t.Fatal(err)
			}
			fh.WriteString("+lost")
		}, map[string]string{"a": "old+more"}},
		{"truncate without fsync is lost", func(t *testing.T, m string) {
			if err := os.Truncate(filepath.Join(m, "a"), 1); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "old"}},
		{"create without directory fsync is lost", func(t *testing.T, m string) {
			write(t, filepath.Join(m, "c"), "sea")
			fsync(t, filepath.Join(m, "c"))
		}, map[string]string{"c": "<absent>"}},
		{"create with directory fsync only is empty", func(t *testing.T, m string) {
			write(t, filepath.Join(m, "c"), "sea")
			fsync(t, m)
		}, map[string]string{"c": ""}},
		{"create with file and directory fsync is kept", func(t *testing.T, m string) {
			write(t, filepath.Join(m, "c"), "sea")
			fsync(t, filepath.Join(m, "c"))
			fsync(t, m)
		}, map[string]string{"c": "sea"}},
		{"rename without directory fsync reverts", func(t *testing.T, m string) {
			if err := os.Rename(filepath.Join(m, "a"), filepath.Join(m, "z")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "old", "z": "<absent>"}},
		{"rename with directory fsync is kept", func(t *testing.T, m string) {
			if err := os.Rename(filepath.Join(m, "a"), filepath.Join(m, "z")); err != nil {
				t.Fatal(err)
			}
			fsync(t, m)
		}, map[string]string{"a": "<absent>", "z": "old"}},
		{"rename over a durable file without directory fsync brings it back", func(t *testing.T, m string) {
			write(t, filepath.Join(m, "tmp"), "new")
			fsync(t, filepath.Join(m, "tmp"))
			if err := os.Rename(filepath.Join(m, "tmp"), filepath.Join(m, "a")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "old", "tmp": "<absent>"}},
		{"atomic replace with every fsync is kept", func(t *testing.T, m string) {
			write(t, filepath.Join(m, "tmp"), "new")
			fsync(t, filepath.Join(m, "tmp"))
			if err := os.Rename(filepath.Join(m, "tmp"), filepath.Join(m, "a")); err != nil {
				t.Fatal(err)
			}
			fsync(t, m)
		}, map[string]string{"a": "new", "tmp": "<absent>"}},
		{"rename across directories needs both fsynced", func(t *testing.T, m string) {
			if err := os.Rename(filepath.Join(m, "sub", "b"), filepath.Join(m, "b")); err != nil {
				t.Fatal(err)
			}
			fsync(t, m)
		}, map[string]string{"b": "bee", "sub/b": "bee"}},
		{"rename across directories with both fsynced is kept", func(t *testing.T, m string) {
			if err := os.Rename(filepath.Join(m, "sub", "b"), filepath.Join(m, "b")); err != nil {
				t.Fatal(err)
			}
			fsync(t, m)
			fsync(t, filepath.Join(m, "sub"))
		}, map[string]string{"b": "bee", "sub/b": "<absent>"}},
		{"unlink without directory fsync reverts", func(t *testing.T, m string) {
			if err := os.Remove(filepath.Join(m, "a")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "old"}},
		{"unlink with directory fsync is kept", func(t *testing.T, m string) {
			if err := os.Remove(filepath.Join(m, "a")); err != nil {
				t.Fatal(err)
			}
			fsync(t, m)
		}, map[string]string{"a": "<absent>"}},
		{"link without directory fsync is lost", func(t *testing.T, m string) {
			if err := os.Link(filepath.Join(m, "a"), filepath.Join(m, "l")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"a": "old", "l": "<absent>"}},
		{"link with directory fsync is kept", func(t *testing.T, m string) {
			if err := os.Link(filepath.Join(m, "a"), filepath.Join(m, "l")); err != nil {
				t.Fatal(err)
			}
			fsync(t, m)
		}, map[string]string{"a": "old", "l": "old"}},
		{"mkdir without directory fsync is lost", func(t *testing.T, m string) {
			os.Mkdir(filepath.Join(m, "d"), 0o700)
			write(t, filepath.Join(m, "d", "x"), "x")
			fsync(t, filepath.Join(m, "d", "x"))
			fsync(t, filepath.Join(m, "d"))
		}, map[string]string{"d/x": "<absent>"}},
		{"mkdir with every fsync is kept", func(t *testing.T, m string) {
			os.Mkdir(filepath.Join(m, "d"), 0o700)
			write(t, filepath.Join(m, "d", "x"), "x")
			fsync(t, filepath.Join(m, "d", "x"))
			fsync(t, filepath.Join(m, "d"))
			fsync(t, m)
		}, map[string]string{"d/x": "x"}},
		{"rmdir without directory fsync reverts", func(t *testing.T, m string) {
			os.Remove(filepath.Join(m, "sub", "b"))
			if err := os.Remove(filepath.Join(m, "sub")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"sub/b": "bee"}},
		{"rmdir with directory fsync is kept", func(t *testing.T, m string) {
			os.Remove(filepath.Join(m, "sub", "b"))
			if err := os.Remove(filepath.Join(m, "sub")); err != nil {
				t.Fatal(err)
			}
			fsync(t, m)
		}, map[string]string{"sub/b": "<absent>", "sub": "<absent>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, m := mount(t, old)
			tc.act(t, m)
			cut(t, f)
			for p, want := range tc.want {
				if got := content(t, filepath.Join(m, p)); got != want {
					t.Errorf("%s after the cut: %q, want %q", p, got, want)
				}
			}
			if got := content(t, filepath.Join(f.Backing(), "a")); tc.want["a"] != "" && got != tc.want["a"] {
				t.Errorf("backing a: %q, want %q", got, tc.want["a"])
			}
		})
	}
}

// TestPowerCutKeepsInodes checks that a durable file removed or replaced
// without a directory fsync comes back as the same inode, as it would on a
// disk: lease identities name inode numbers.
func TestPowerCutKeepsInodes(t *testing.T) {
	f, m := mount(t, old)
	a, b := filepath.Join(m, "a"), filepath.Join(m, "sub", "b")
	ia, ib := ino(t, a), ino(t, b)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(m, "n"), "x")
	if err := os.Rename(filepath.Join(m, "n"), b); err != nil {
		t.Fatal(err)
	}
	lost, err := f.PowerCut()
	if err != nil {
		t.Fatal(err)
	}
	if got := ino(t, a); got != ia {
		t.Errorf("a is inode %d after the cut, was %d", got, ia)
	}
	if got := ino(t, b); got != ib {
		t.Errorf("sub/b is inode %d after the cut, was %d", got, ib)
	}
	if content(t, b) != "bee" {
		t.Errorf("sub/b holds %q", content(t, b))
	}
	if len(lost) == 0 {
		t.Error("the cut reports no lost path")
	}
}

func TestChmodNeedsFsync(t *testing.T) {
	for _, synced := range []bool{false, true} {
		f, m := mount(t, old)
		a := filepath.Join(m, "a")
		if err := os.Chmod(a, 0o600); err != nil {
			t.Fatal(err)
		}
		if synced {
			fsync(t, a)
		}
		cut(t, f)
		fi, err := os.Stat(a)
		if err != nil {
			t.Fatal(err)
		}
		want := os.FileMode(0o644)
		if synced {
			want = 0o600
		}
		if fi.Mode().Perm() != want {
			t.Errorf("fsynced %v: mode %v after the cut, want %v", synced, fi.Mode().Perm(), want)
		}
	}
}

// TestPassThrough checks the operations the code under test uses beyond
// plain reads and writes: openat2 beneath a directory, O_EXCL, O_NOFOLLOW
// on a hostile link, RENAME_NOREPLACE, O_DIRECT, statfs and flock across
// processes.
func TestPassThrough(t *testing.T) {
	f, m := mount(t, old)
	dirfd, err := unix.Open(m, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat2(dirfd, "sub/b", &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		t.Fatalf("openat2 beneath the mount: %v", err)
	}
	unix.Close(fd)
	if err := os.Symlink("/etc/passwd", filepath.Join(m, "hostile")); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(m, "hostile")); err != nil || target != "/etc/passwd" {
		t.Fatalf("readlink: %q, %v", target, err)
	}
	if _, err := unix.Openat2(dirfd, "hostile", &unix.OpenHow{Flags: unix.O_RDONLY, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS}); !errors.Is(err, unix.ELOOP) {
		t.Errorf("openat2 through a link: %v, want ELOOP", err)
	}
	if _, err := unix.Open(filepath.Join(m, "hostile"), unix.O_RDONLY|unix.O_NOFOLLOW, 0); !errors.Is(err, unix.ELOOP) {
		t.Errorf("O_NOFOLLOW on a link: %v, want ELOOP", err)
	}
	if _, err := os.OpenFile(filepath.Join(m, "a"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); !errors.Is(err, os.ErrExist) {
		t.Errorf("O_EXCL over an existing file: %v", err)
	}
	write(t, filepath.Join(m, "t"), "t")
	if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(m, "t"), unix.AT_FDCWD, filepath.Join(m, "a"), unix.RENAME_NOREPLACE); !errors.Is(err, unix.EEXIST) {
		t.Errorf("RENAME_NOREPLACE over an existing file: %v", err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(m, &sfs); err != nil || sfs.Bsize == 0 {
		t.Errorf("statfs: %+v, %v", sfs, err)
	}

	// O_DIRECT with aligned buffers, as the image unpacker writes.
	dfd, err := unix.Open(filepath.Join(m, "direct"), unix.O_WRONLY|unix.O_CREAT|unix.O_DIRECT, 0o600)
	if err != nil {
		t.Fatalf("O_DIRECT open: %v", err)
	}
	buf := alignedBlock(4096)
	copy(buf, "direct")
	if n, err := unix.Pwrite(dfd, buf, 0); err != nil || n != len(buf) {
		t.Fatalf("O_DIRECT write: %d, %v", n, err)
	}
	if err := unix.Fsync(dfd); err != nil {
		t.Fatal(err)
	}
	unix.Close(dfd)
	fsync(t, m)
	cut(t, f)
	if got := content(t, filepath.Join(m, "direct")); !bytes.HasPrefix([]byte(got), []byte("direct")) || len(got) != 4096 {
		t.Errorf("O_DIRECT file after the cut: %d bytes", len(got))
	}

	// flock taken here is seen by another process through the mount.
	lock, err := os.Open(filepath.Join(m, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatalf("flock: %v", err)
	}
	if out, err := exec.Command("flock", "-n", filepath.Join(m, "a"), "true").CombinedOutput(); err == nil {
		t.Errorf("another process took the lock held here\n%s", out)
	}
	unix.Flock(int(lock.Fd()), unix.LOCK_UN)
	if out, err := exec.Command("flock", "-n", filepath.Join(m, "a"), "true").CombinedOutput(); err != nil {
		t.Errorf("another process could not take the released lock: %v\n%s", err, out)
	}
}

// alignedBlock returns n bytes aligned to 4096 for O_DIRECT.
func alignedBlock(n int) []byte {
	b := make([]byte, n+4096)
	off := 4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)
	if off == 4096 {
		off = 0
	}
	return b[off : off+n]
}
