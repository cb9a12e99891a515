package lease

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

const (
	testInstallation = "0b5c8c4e-3f7a-4b8e-9d2a-6c1e5f0a7b3d"
	testDigest       = "5e0cf9a7b8c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7"
)

var uid = os.Getuid()

func testID(g int64) Identity {
	return Identity{InstallationID: testInstallation, Generation: g, SpecificationDigest: testDigest}
}

// genDir returns a fresh private generations directory.
func genDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state", "node", "generations")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// initLease initializes generation g's lease and closes it.
func initLease(t *testing.T, dir string, g int64) {
	t.Helper()
	l, err := Initialize(dir, testID(g), uid)
	if err != nil {
		t.Fatalf("Initialize: %v", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, data []byte, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, data, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func TestInitializePublishesIdentity(t *testing.T) {
	dir := genDir(t)
	l, err := Initialize(dir, testID(7), uid)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "7.lease"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o600 || st.Size != 0 {
		t.Errorf("lease mode %04o size %d, want 0600 and empty", st.Mode&0o7777, st.Size)
	}
	data, err := os.ReadFile(filepath.Join(dir, "7.lease-identity"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := []string{"device", "generation", "inode", "installation_id", "specification_digest"}
	if !equalStrings(keys, want) {
		t.Errorf("identity keys %v, want %v", keys, want)
	}
	if uint64(m["inode"].(float64)) != st.Ino || uint64(m["device"].(float64)) != st.Dev {
		t.Errorf("identity %s does not name the lease inode %d", data, st.Ino)
	}
	if got := l.Identity(); got.Identity != testID(7) || got.Inode != st.Ino {
		t.Errorf("Identity() = %+v", got)
	}
	if fi, err := os.Stat(filepath.Join(dir, "7.lease-identity")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("identity mode %v %v", fi.Mode(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".generation-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
	l2, err := Open(dir, testID(7), uid)
	if err != nil {
		t.Fatalf("Open after Initialize: %v", err)
	}
	l2.Close()
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestInitializeRefusesExisting(t *testing.T) {
	t.Run("foreign bytes at the lease", func(t *testing.T) {
		dir := genDir(t)
		path := filepath.Join(dir, "3.lease")
		writeFile(t, path, []byte("kept"), 0o600)
		var before unix.Stat_t
		unix.Lstat(path, &before)
		_, err := Initialize(dir, testID(3), uid)
		if !errors.Is(err, ErrLeaseExists) {
			t.Fatalf("err = %v, want ErrLeaseExists", err)
		}
		got, _ := os.ReadFile(path)
		var after unix.Stat_t
		unix.Lstat(path, &after)
		if string(got) != "kept" || after.Ino != before.Ino || after.Mtim != before.Mtim {
			t.Errorf("lease touched: %q inode %d→%d", got, before.Ino, after.Ino)
		}
		if _, err := os.Lstat(filepath.Join(dir, "3.lease-identity")); !os.IsNotExist(err) {
			t.Errorf("identity published for a foreign lease: %v", err)
		}
	})
	t.Run("interrupted initialization is never re-adopted", func(t *testing.T) {
		dir := genDir(t)
		// What a crash at the lease-created point leaves: the lease only.
		path := filepath.Join(dir, "4.lease")
		writeFile(t, path, nil, 0o600)
		if _, err := Initialize(dir, testID(4), uid); !errors.Is(err, ErrLeaseExists) {
			t.Fatalf("Initialize err = %v, want ErrLeaseExists", err)
		}
		if _, err := Open(dir, testID(4), uid); !errors.Is(err, ErrIdentityMissing) {
			t.Fatalf("Open err = %v, want ErrIdentityMissing", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "4.lease-identity")); !os.IsNotExist(err) {
			t.Errorf("identity was re-created: %v", err)
		}
	})
	t.Run("initialized twice", func(t *testing.T) {
		dir := genDir(t)
		initLease(t, dir, 5)
		before, _ := os.ReadFile(filepath.Join(dir, "5.lease-identity"))
		if _, err := Initialize(dir, testID(5), uid); !errors.Is(err, ErrLeaseExists) {
			t.Fatalf("err = %v, want ErrLeaseExists", err)
		}
		after, _ := os.ReadFile(filepath.Join(dir, "5.lease-identity"))
		if !bytes.Equal(before, after) {
			t.Error("identity changed")
		}
	})
	t.Run("identity without lease", func(t *testing.T) {
		dir := genDir(t)
		initLease(t, dir, 6)
		os.Remove(filepath.Join(dir, "6.lease"))
		if _, err := Initialize(dir, testID(6), uid); !errors.Is(err, ErrLeaseMissing) {
			t.Fatalf("err = %v, want ErrLeaseMissing", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "6.lease")); !os.IsNotExist(err) {
			t.Error("lease re-created")
		}
	})
}

func TestOpenRefusals(t *testing.T) {
	const g = 9
	lease := func(dir string) string { return filepath.Join(dir, "9.lease") }
	ident := func(dir string) string { return filepath.Join(dir, "9.lease-identity") }
	rewriteIdentity := func(t *testing.T, dir string, edit func(map[string]any)) {
		data, err := os.ReadFile(ident(dir))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(data, &m)
		edit(m)
		out, _ := json.Marshal(m)
		writeFile(t, ident(dir), out, 0o600)
	}
	cases := []struct {
		name   string
		root   bool
		mutate func(t *testing.T, dir string)
		want   Identity
		err    error
		unsafe bool
	}{
		{name: "symlinked lease", mutate: func(t *testing.T, dir string) {
			os.Rename(lease(dir), lease(dir)+".real")
			os.Symlink("9.lease.real", lease(dir))
		}, err: ErrSymlink, unsafe: true},
		{name: "hard-linked lease", mutate: func(t *testing.T, dir string) {
			os.Link(lease(dir), filepath.Join(dir, "other"))
		}, err: ErrHardLinked, unsafe: true},
		{name: "foreign owner", root: true, mutate: func(t *testing.T, dir string) {
			os.Chown(lease(dir), 4242, 4242)
		}, err: ErrForeignOwner, unsafe: true},
		{name: "lease mode 0644", mutate: func(t *testing.T, dir string) {
			os.Chmod(lease(dir), 0o644)
		}, err: ErrUnsafeMode, unsafe: true},
		{name: "identity mode 0640", mutate: func(t *testing.T, dir string) {
			os.Chmod(ident(dir), 0o640)
		}, err: ErrUnsafeMode, unsafe: true},
		{name: "symlinked identity", mutate: func(t *testing.T, dir string) {
			os.Rename(ident(dir), filepath.Join(dir, "elsewhere"))
			os.Symlink("elsewhere", ident(dir))
		}, err: ErrSymlink, unsafe: true},
		{name: "hard-linked identity", mutate: func(t *testing.T, dir string) {
			os.Link(ident(dir), filepath.Join(dir, "copy"))
		}, err: ErrHardLinked, unsafe: true},
		{name: "oversized identity", mutate: func(t *testing.T, dir string) {
			rewriteIdentity(t, dir, func(m map[string]any) {})
			data, _ := os.ReadFile(ident(dir))
			writeFile(t, ident(dir), append(data, bytes.Repeat([]byte(" "), 4097)...), 0o600)
		}, err: ErrTooLarge, unsafe: true},
		{name: "fifo at the identity", mutate: func(t *testing.T, dir string) {
			os.Remove(ident(dir))
			if err := unix.Mkfifo(ident(dir), 0o600); err != nil {
				t.Fatal(err)
			}
		}, err: ErrNotRegular, unsafe: true},
		{name: "fifo at the lease", mutate: func(t *testing.T, dir string) {
			os.Remove(lease(dir))
			unix.Mkfifo(lease(dir), 0o600)
		}, err: ErrNotRegular, unsafe: true},
		{name: "replaced lease inode", mutate: func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "new"), nil, 0o600)
			os.Rename(filepath.Join(dir, "new"), lease(dir))
		}, err: ErrInodeReplaced},
		{name: "identity naming another inode", mutate: func(t *testing.T, dir string) {
			rewriteIdentity(t, dir, func(m map[string]any) { m["inode"] = m["inode"].(float64) + 1 })
		}, err: ErrInodeReplaced},
		{name: "missing identity", mutate: func(t *testing.T, dir string) {
			os.Remove(ident(dir))
		}, err: ErrIdentityMissing},
		{name: "missing lease", mutate: func(t *testing.T, dir string) {
			os.Remove(lease(dir))
		}, err: ErrLeaseMissing},
		{name: "mismatched digest", want: Identity{testInstallation, g, "ff" + testDigest[2:]}, err: ErrIdentityMismatch},
		{name: "mismatched installation", want: Identity{"11111111-2222-4333-8444-555555555555", g, testDigest}, err: ErrIdentityMismatch},
		{name: "identity of another generation", mutate: func(t *testing.T, dir string) {
			rewriteIdentity(t, dir, func(m map[string]any) { m["generation"] = 10 })
		}, err: ErrIdentityMismatch},
		{name: "unknown key", mutate: func(t *testing.T, dir string) {
			rewriteIdentity(t, dir, func(m map[string]any) { m["comment"] = "x" })
		}, err: ErrMalformed},
		{name: "missing key", mutate: func(t *testing.T, dir string) {
			rewriteIdentity(t, dir, func(m map[string]any) { delete(m, "device") })
		}, err: ErrMalformed},
		{name: "generation as string", mutate: func(t *testing.T, dir string) {
			rewriteIdentity(t, dir, func(m map[string]any) { m["generation"] = "9" })
		}, err: ErrMalformed},
		{name: "duplicate key", mutate: func(t *testing.T, dir string) {
			data, _ := os.ReadFile(ident(dir))
			data = bytes.Replace(data, []byte("{"), []byte(`{"generation": 9,`), 1)
			writeFile(t, ident(dir), data, 0o600)
		}, err: ErrMalformed},
		{name: "group-writable directory", mutate: func(t *testing.T, dir string) {
			os.Chmod(dir, 0o770)
		}, err: ErrUnsafeMode, unsafe: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				t.Skip("changing a file's owner needs root")
			}
			dir := genDir(t)
			initLease(t, dir, g)
			if c.mutate != nil {
				c.mutate(t, dir)
			}
			want := c.want
			if want == (Identity{}) {
				want = testID(g)
			}
			done := make(chan error, 1)
			go func() {
				l, err := Open(dir, want, uid)
				if err == nil {
					l.Close()
				}
				done <- err
			}()
			var err error
			select {
			case err = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Open blocked")
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if errors.Is(err, ErrUnsafe) != c.unsafe || errors.Is(err, safefile.ErrUnsafe) != c.unsafe {
				t.Errorf("errors.Is(err, ErrUnsafe) = %v, want %v", !c.unsafe, c.unsafe)
			}
			// An unsafe file is the safe-file layer's refusal; the lease's
			// own checks are a *CheckError. Both name the path and check.
			var ce *CheckError
			var ue *safefile.UnsafeError
			switch {
			case c.unsafe && errors.As(err, &ue):
				if ue.Path == "" || ue.Check() == "" {
					t.Errorf("err %v does not name path and check", err)
				}
			case !c.unsafe && errors.As(err, &ce):
				if ce.Path == "" || ce.Check == "" {
					t.Errorf("err %v does not name path and check", err)
				}
			default:
				t.Errorf("err %v: got %T, want *safefile.UnsafeError for unsafe files and *CheckError otherwise", err, err)
			}
		})
	}
}

func TestTryExclusive(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 2)
	a, err := Open(dir, testID(2), uid)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(dir, testID(2), uid)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := a.TryExclusive(); err != nil {
		t.Fatalf("first TryExclusive: %v", err)
	}
	err = b.TryExclusive()
	if !errors.Is(err, ErrHelperActive) || err.Error() == "" {
		t.Fatalf("second TryExclusive = %v, want ErrHelperActive", err)
	}
	a.Close()
	if err := b.TryExclusive(); err != nil {
		t.Fatalf("TryExclusive after the holder closed: %v", err)
	}
}

func TestTryExclusiveRevalidatesUnderTheLock(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 2)
	l, err := Open(dir, testID(2), uid)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	// Replace the lease path between open and lock.
	writeFile(t, filepath.Join(dir, "new"), nil, 0o600)
	os.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "2.lease"))
	if err := l.TryExclusive(); !errors.Is(err, ErrInodeReplaced) {
		t.Fatalf("err = %v, want ErrInodeReplaced", err)
	}
}

func TestIdentityValidate(t *testing.T) {
	cases := []struct {
		name string
		id   Identity
		ok   bool
	}{
		{"valid", testID(1), true},
		{"uppercase uuid", Identity{"0B5C8C4E-3F7A-4B8E-9D2A-6C1E5F0A7B3D", 1, testDigest}, false},
		{"zero generation", Identity{testInstallation, 0, testDigest}, false},
		{"short digest", Identity{testInstallation, 1, testDigest[1:]}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.id.Validate()
			if (err == nil) != c.ok || !c.ok && !errors.Is(err, ErrInvalidIdentity) {
				t.Errorf("Validate = %v, ok want %v", err, c.ok)
			}
		})
	}
	if _, err := Initialize(genDir(t), Identity{"x", 1, testDigest}, uid); !errors.Is(err, ErrInvalidIdentity) {
		t.Errorf("Initialize with invalid identity: %v", err)
	}
}
