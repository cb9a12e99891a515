package safefile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveAllNeverFollowsALink: a link for a parent of rel is removed
// itself; links inside the tree are unlinked, not entered; the targets
// stay as they are.
func TestRemoveAllNeverFollowsALink(t *testing.T) {
	base, target := t.TempDir(), t.TempDir()
	secret := filepath.Join(target, "secret")
	if err := os.MkdirAll(filepath.Join(target, "nodes", "n"), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(secret, []byte("x"), 0o600)
	os.WriteFile(filepath.Join(target, "nodes", "n", "f"), []byte("x"), 0o600)
	os.MkdirAll(filepath.Join(base, "a", "n", "d"), 0o700)
	os.Symlink(target, filepath.Join(base, "a", "n", "d", "dirlink"))
	os.Symlink(secret, filepath.Join(base, "a", "n", "filelink"))
	os.Link(secret, filepath.Join(base, "a", "n", "hard"))
	unix.Mkfifo(filepath.Join(base, "a", "n", "fifo"), 0o600)
	os.Symlink(target, filepath.Join(base, "b"))

	r, err := OpenRoot(base)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rel := range []string{"a/n", "b/nodes/n", "missing/n", "a/n"} {
		if err := r.RemoveAll(rel); err != nil {
			t.Fatalf("RemoveAll(%s): %v", rel, err)
		}
	}
	for _, p := range []string{"a/n", "b"} {
		if _, err := os.Lstat(filepath.Join(base, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s remains: %v", p, err)
		}
	}
	for _, p := range []string{secret, filepath.Join(target, "nodes", "n", "f")} {
		if data, err := os.ReadFile(p); err != nil || string(data) != "x" {
			t.Errorf("the target %s changed: %q %v", p, data, err)
		}
	}
	if err := r.RemoveAll("../x"); !errors.Is(err, ErrEscapes) {
		t.Errorf("RemoveAll(../x): %v", err)
	}
}

func TestOpenRootInRefusesALinkInThePath(t *testing.T) {
	base, target := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(target, "nodes", "n"), 0o700)
	os.Symlink(target, filepath.Join(base, "oac"))
	if _, err := OpenRootIn(base, "oac/nodes/n", Expect{UID: AnyUID}); !errors.Is(err, ErrSymlink) {
		t.Errorf("through a link: %v", err)
	}
	os.MkdirAll(filepath.Join(base, "real", "n"), 0o700)
	r, err := OpenRootIn(base, "real/n", Expect{UID: os.Getuid()})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// TestRemoveTreeStopsAtAMountPoint runs, as root, in a private mount
// namespace of its own (unshare -m), so the machine's mounts never change:
// a tmpfs and a bind mount inside the tree are refused, not entered, and
// what they hold stays.
func TestRemoveTreeStopsAtAMountPoint(t *testing.T) {
	if os.Getenv("SAFEFILE_MOUNT_CHILD") == "" {
		if os.Geteuid() != 0 {
			t.Skip("needs root: mounts in a private mount namespace")
		}
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("needs unshare(1) for a private mount namespace")
		}
		cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0], "-test.run=^TestRemoveTreeStopsAtAMountPoint$", "-test.count=1")
		cmd.Env = append(os.Environ(), "SAFEFILE_MOUNT_CHILD=1", "SAFEFILE_MOUNT_DIR="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	base := os.Getenv("SAFEFILE_MOUNT_DIR")
	victim := filepath.Join(base, "victim")
	for _, d := range []string{"tree/tmpfs", "tree/bind", "victim"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(victim, "keep"), []byte("x"), 0o600)
	if err := unix.Mount("tmpfs", filepath.Join(base, "tree/tmpfs"), "tmpfs", 0, ""); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	os.WriteFile(filepath.Join(base, "tree/tmpfs/keep"), []byte("x"), 0o600)
	for _, dir := range []string{"tree/tmpfs", "tree/bind"} {
		if dir == "tree/bind" {
			unix.Unmount(filepath.Join(base, "tree/tmpfs"), 0)
			os.Remove(filepath.Join(base, "tree/tmpfs"))
			os.MkdirAll(filepath.Join(base, dir), 0o700) // the first removal took it
			if err := unix.Mount(victim, filepath.Join(base, dir), "", unix.MS_BIND, ""); err != nil {
				t.Fatal(err)
			}
		}
		err := RemoveTree(filepath.Join(base, "tree"))
		if !errors.Is(err, errMountPoint) {
			t.Errorf("%s: RemoveTree: %v", dir, err)
		}
		if _, err := os.Stat(filepath.Join(base, dir, "keep")); err != nil {
			t.Errorf("%s: what the mount holds is gone: %v", dir, err)
		}
	}
	if _, err := os.Stat(filepath.Join(victim, "keep")); err != nil {
		t.Errorf("the bind mount's source lost its file: %v", err)
	}
}
