package download

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

func localSource(t *testing.T, dir, rel string) LocalSource {
	t.Helper()
	root, err := safefile.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return LocalSource{Root: root, Rel: rel, Expect: safefile.Expect{UID: os.Geteuid(), DenyMode: 0o022}}
}

// A local copy publishes exactly the declared bytes, reuses a target that
// verifies, leaves a different one alone, and leaves no part file behind.
func TestCopyLocalPublishesVerifiedBytes(t *testing.T) {
	data := payload(3<<20+17, 4)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a"), data)
	target := targetIn(t)
	req := Request{Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o700}
	var last int64
	req.Progress = func(done, total int64) { last = done }
	if err := CopyLocal(context.Background(), localSource(t, src, "a"), req); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(target)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("target: %v, %d bytes", err, len(got))
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o700 {
		t.Errorf("mode %v", fi.Mode())
	}
	if last != int64(len(data)) {
		t.Errorf("progress ended at %d", last)
	}
	if _, err := os.Lstat(PartPath(target)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("part file left: %v", err)
	}
	st, err := copyLocal(context.Background(), localSource(t, src, "a"), req)
	if err != nil || !st.Reused {
		t.Fatalf("second copy: %+v %v", st, err)
	}
	other := targetIn(t)
	writeFile(t, other, data[:10])
	req.Target = other
	if err := CopyLocal(context.Background(), localSource(t, src, "a"), req); !errors.Is(err, ErrTargetConflict) {
		t.Fatalf("different target: %v", err)
	}
	if b, _ := os.ReadFile(other); len(b) != 10 {
		t.Error("a different target was changed")
	}
}

// A source that is a link, not regular, of another owner, or whose bytes
// differ from the declared ones publishes nothing and leaves no part.
func TestCopyLocalRefusals(t *testing.T) {
	data := payload(5000, 5)
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, dir string)
		size     int64
		sum      string
		sentinel error
	}{
		{"symlink", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "real"), data)
			os.Symlink("real", filepath.Join(dir, "a"))
		}, 5000, hexSum(data), safefile.ErrSymlink},
		{"directory", func(t *testing.T, dir string) { os.Mkdir(filepath.Join(dir, "a"), 0o755) }, 5000, hexSum(data), safefile.ErrNotRegular},
		{"hard link", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "a"), data)
			os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "b"))
		}, 5000, hexSum(data), safefile.ErrHardLinked},
		{"writable by others", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "a"), data)
			os.Chmod(filepath.Join(dir, "a"), 0o666)
		}, 5000, hexSum(data), safefile.ErrUnsafeMode},
		{"shorter", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "a"), data[:4999]) }, 5000, hexSum(data), ErrSize},
		{"longer", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "a"), append(data, 1)) }, 5000, hexSum(data), ErrSize},
		{"other bytes", func(t *testing.T, dir string) {
			b := bytes.Clone(data)
			b[4000] ^= 1
			writeFile(t, filepath.Join(dir, "a"), b)
		}, 5000, hexSum(data), ErrChecksum},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			tc.setup(t, src)
			target := targetIn(t)
			err := CopyLocal(context.Background(), localSource(t, src, "a"), Request{Target: target, Size: tc.size, SHA256: tc.sum, Mode: 0o600})
			if !errors.Is(err, tc.sentinel) {
				t.Fatalf("error %v, want %v", err, tc.sentinel)
			}
			for _, p := range []string{target, PartPath(target)} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s: %v", filepath.Base(p), err)
				}
			}
		})
	}
	if os.Geteuid() == 0 {
		src := t.TempDir()
		writeFile(t, filepath.Join(src, "a"), data)
		os.Chown(filepath.Join(src, "a"), 4321, 4321)
		err := CopyLocal(context.Background(), localSource(t, src, "a"), Request{Target: targetIn(t), Size: 5000, SHA256: hexSum(data), Mode: 0o600})
		if !errors.Is(err, safefile.ErrForeignOwner) {
			t.Fatalf("foreign owner: %v", err)
		}
	}
}

// A cancelled copy stops and removes its part.
func TestCopyLocalCancelled(t *testing.T) {
	data := payload(3<<20, 6)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a"), data)
	target := targetIn(t)
	ctx, cancel := context.WithCancel(context.Background())
	req := Request{Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600,
		Progress: func(done, total int64) {
			if done > 0 {
				cancel()
			}
		}}
	if err := CopyLocal(ctx, localSource(t, src, "a"), req); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	for _, p := range []string{target, PartPath(target)} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v", filepath.Base(p), err)
		}
	}
}
