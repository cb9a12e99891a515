package safefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// otherUID is an uid no test file is owned by.
const otherUID = 54321

func writeFile(t *testing.T, path string, data string, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func openTestRoot(t *testing.T, dir string) *Root {
	t.Helper()
	r, err := OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// bothResolvers runs f with openat2 and with the component walk.
func bothResolvers(t *testing.T, f func(t *testing.T)) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			old := noOpenat2.Load()
			noOpenat2.Store(walk)
			t.Cleanup(func() { noOpenat2.Store(old) })
			f(t)
		})
	}
}

func TestRootReadFile(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		dir := t.TempDir()
		uid := os.Geteuid()
		writeFile(t, filepath.Join(dir, "state/node/generations/1.json"), `{"generation":1}`, 0o600)
		r := openTestRoot(t, dir)
		got, err := r.ReadFile("state/node/generations/1.json", Expect{UID: uid, Mode: 0o600, MaxSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != `{"generation":1}` {
			t.Fatalf("read %q", got)
		}
		// "./" components are harmless.
		if _, err := r.ReadFile("./state/node/generations/1.json", Expect{UID: uid}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestRootRefusals(t *testing.T) {
	uid := os.Geteuid()
	exp := Expect{UID: uid, Mode: 0o600, MaxSize: 64}
	tests := []struct {
		name   string
		setup  func(t *testing.T, dir string)
		rel    string
		exp    Expect
		reason string // substring of the refusal; "" means os.ErrNotExist
		why    error  // the sentinel the refusal matches
	}{
		{
			name: "symlink",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "real"), "x", 0o600)
				must(t, os.Symlink("real", filepath.Join(dir, "f")))
			},
			rel: "f", exp: exp, reason: "symbolic link", why: ErrSymlink,
		},
		{
			name: "symlink to outside",
			setup: func(t *testing.T, dir string) {
				must(t, os.Symlink("/etc/hostname", filepath.Join(dir, "f")))
			},
			rel: "f", exp: exp, reason: "symbolic link", why: ErrSymlink,
		},
		{
			name: "symlinked parent directory",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "real/f"), "x", 0o600)
				must(t, os.Symlink("real", filepath.Join(dir, "d")))
			},
			rel: "d/f", exp: exp, reason: "symbolic link", why: ErrSymlink,
		},
		{
			name:  "absolute path",
			setup: func(t *testing.T, dir string) {},
			rel:   "/etc/hostname", exp: Expect{UID: AnyUID}, reason: "leaves its root", why: ErrEscapes,
		},
		{
			name: "dot dot",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "sub/f"), "x", 0o600)
			},
			rel: "sub/../sub/f", exp: exp, reason: "leaves its root", why: ErrEscapes,
		},
		{
			name: "hard link",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "a"), "x", 0o600)
				must(t, os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "f")))
			},
			rel: "f", exp: exp, reason: "link count 2", why: ErrHardLinked,
		},
		{
			name: "fifo",
			setup: func(t *testing.T, dir string) {
				must(t, unix.Mkfifo(filepath.Join(dir, "f"), 0o600))
			},
			rel: "f", exp: exp, reason: "not a regular file", why: ErrNotRegular,
		},
		{
			name: "directory",
			setup: func(t *testing.T, dir string) {
				must(t, os.Mkdir(filepath.Join(dir, "f"), 0o600))
			},
			rel: "f", exp: exp, reason: "not a regular file", why: ErrNotRegular,
		},
		{
			name: "wrong mode",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "f"), "x", 0o644)
			},
			rel: "f", exp: exp, reason: "mode 0644, want 0600", why: ErrUnsafeMode,
		},
		{
			name: "oversized",
			setup: func(t *testing.T, dir string) {
				writeFile(t, filepath.Join(dir, "f"), strings.Repeat("x", 65), 0o600)
			},
			rel: "f", exp: exp, reason: "65 bytes, at most 64", why: ErrTooLarge,
		},
		{
			name: "wrong owner",
			setup: func(t *testing.T, dir string) {
				if os.Geteuid() != 0 {
					t.Skip("changing a file's owner needs root")
				}
				writeFile(t, filepath.Join(dir, "f"), "x", 0o600)
				must(t, os.Lchown(filepath.Join(dir, "f"), otherUID, otherUID))
			},
			rel: "f", exp: exp, reason: "owner uid 54321", why: ErrForeignOwner,
		},
		{
			name:  "missing",
			setup: func(t *testing.T, dir string) {},
			rel:   "f", exp: exp,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bothResolvers(t, func(t *testing.T) {
				dir := t.TempDir()
				tt.setup(t, dir)
				r := openTestRoot(t, dir)
				done := make(chan error, 1)
				go func() {
					_, err := r.ReadFile(tt.rel, tt.exp)
					done <- err
				}()
				var err error
				select {
				case err = <-done:
				case <-time.After(10 * time.Second):
					t.Fatal("ReadFile blocked")
				}
				if tt.reason == "" {
					if !errors.Is(err, os.ErrNotExist) {
						t.Fatalf("got %v, want os.ErrNotExist", err)
					}
					if errors.Is(err, ErrUnsafe) {
						t.Fatalf("missing file reported unsafe: %v", err)
					}
					return
				}
				var ue *UnsafeError
				if !errors.As(err, &ue) || !errors.Is(err, ErrUnsafe) {
					t.Fatalf("got %v, want *UnsafeError", err)
				}
				if !strings.Contains(ue.Error(), tt.reason) {
					t.Fatalf("refusal %q does not say %q", ue.Error(), tt.reason)
				}
				if !errors.Is(err, tt.why) {
					t.Fatalf("refusal %v does not match %v", err, tt.why)
				}
				if !strings.HasPrefix(ue.Path, dir) {
					t.Fatalf("path %q not under %s", ue.Path, dir)
				}
			})
		})
	}
}

func TestRootReplacedWhileOpening(t *testing.T) {
	for _, tt := range []struct {
		name    string
		replace func(dir string) error
		reason  string
	}{
		{"renamed over", func(dir string) error {
			writeFile(t, filepath.Join(dir, "other"), "y", 0o600)
			return os.Rename(filepath.Join(dir, "other"), filepath.Join(dir, "f"))
		}, "replaced"},
		{"symlink put in place", func(dir string) error {
			must(t, os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "g")))
			return os.Symlink("g", filepath.Join(dir, "f"))
		}, "replaced"},
		{"removed", func(dir string) error {
			return os.Remove(filepath.Join(dir, "f"))
		}, "removed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "f"), "x", 0o600)
			r := openTestRoot(t, dir)
			afterOpen = func() {
				if err := tt.replace(dir); err != nil {
					t.Error(err)
				}
			}
			t.Cleanup(func() { afterOpen = nil })
			_, err := r.ReadFile("f", Expect{UID: os.Geteuid()})
			var ue *UnsafeError
			if !errors.As(err, &ue) || !errors.Is(err, ErrReplaced) || !strings.Contains(ue.Error(), tt.reason) {
				t.Fatalf("got %v, want refusal saying %q", err, tt.reason)
			}
		})
	}
}

func TestRootOpenDir(t *testing.T) {
	bothResolvers(t, func(t *testing.T) {
		dir := t.TempDir()
		uid := os.Geteuid()
		writeFile(t, filepath.Join(dir, "gens/2.json"), "{}", 0o600)
		writeFile(t, filepath.Join(dir, "gens/1.json"), "{}", 0o600)
		must(t, os.Chmod(filepath.Join(dir, "gens"), 0o700))
		must(t, os.Symlink("gens", filepath.Join(dir, "link")))
		r := openTestRoot(t, dir)

		sub, err := r.OpenDir("gens", Expect{UID: uid, Mode: 0o700})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Close()
		names, err := sub.ReadDir()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(names, ",") != "1.json,2.json" {
			t.Fatalf("names %v", names)
		}
		if _, err := sub.ReadFile("1.json", Expect{UID: uid, Mode: 0o600}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.OpenDir("gens", Expect{UID: uid, Mode: 0o755}); !errors.Is(err, ErrUnsafe) {
			t.Fatalf("wrong directory mode: got %v", err)
		}
		if _, err := r.OpenDir("link", Expect{UID: uid}); !errors.Is(err, ErrUnsafe) {
			t.Fatalf("symlinked directory: got %v", err)
		}
		if _, err := r.OpenDir("gens/1.json", Expect{UID: uid}); err == nil {
			t.Fatal("a file opened as a directory")
		}
		self, err := r.OpenDir(".", Expect{UID: uid})
		if err != nil {
			t.Fatal(err)
		}
		self.Close()
	})
}

func TestRootAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "gens/x"), "", 0o600)
	r := openTestRoot(t, dir)
	for _, data := range []string{"first", "second, longer"} {
		if err := r.AtomicWriteTemp("gens/1.preparing", ".generation-", []byte(data), 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadFile("gens/1.preparing", Expect{UID: os.Geteuid(), Mode: 0o640})
		if err != nil || string(got) != data {
			t.Fatalf("read %q, %v", got, err)
		}
	}
	assertNoTemp(t, filepath.Join(dir, "gens"))
	// A temporary file an interrupted run left is replaced.
	writeFile(t, filepath.Join(dir, "gens/.generation-1.preparing"), "stale", 0o600)
	if err := r.AtomicWriteTemp("gens/1.preparing", ".generation-", []byte("third"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertNoTemp(t, filepath.Join(dir, "gens"))

	// Through a symlinked directory nothing is written.
	must(t, os.Symlink("gens", filepath.Join(dir, "link")))
	if err := r.AtomicWrite("link/2.json", []byte("x"), 0o600); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("write through symlink: got %v", err)
	}
	// A rename onto a directory fails and leaves no temporary file.
	must(t, os.Mkdir(filepath.Join(dir, "gens/d"), 0o700))
	writeFile(t, filepath.Join(dir, "gens/d/keep"), "", 0o600)
	if err := r.AtomicWrite("gens/d", []byte("x"), 0o600); err == nil {
		t.Fatal("replaced a directory")
	}
	assertNoTemp(t, filepath.Join(dir, "gens"))
	// A symlink at the target is replaced, never followed.
	writeFile(t, filepath.Join(dir, "outside"), "keep", 0o600)
	must(t, os.Symlink("../outside", filepath.Join(dir, "gens/s")))
	if err := r.AtomicWrite("gens/s", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "outside")); string(b) != "keep" {
		t.Fatalf("symlink target written: %q", b)
	}
}

func TestRootPublishOnce(t *testing.T) {
	dir := t.TempDir()
	r := openTestRoot(t, dir)
	data := []byte(`{"generation":3}` + "\n")
	if err := r.PublishOnce("3.json", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := r.PublishOnce("3.json", data, 0o600); err != nil {
		t.Fatalf("equal bytes: %v", err)
	}
	err := r.PublishOnce("3.json", []byte("other"), 0o600)
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) {
		t.Fatalf("different bytes: got %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "3.json")); !bytes.Equal(b, data) {
		t.Fatalf("overwritten: %q", b)
	}
	must(t, os.Symlink("3.json", filepath.Join(dir, "4.json")))
	if err := r.PublishOnce("4.json", data, 0o600); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("symlink at target: got %v", err)
	}
	must(t, os.Chmod(filepath.Join(dir, "3.json"), 0o644))
	if err := r.PublishOnce("3.json", data, 0o600); !errors.Is(err, ErrUnsafe) {
		t.Fatalf("existing file of another mode: got %v", err)
	}
	assertNoTemp(t, dir)
}

func TestRootRemoveAndMkdir(t *testing.T) {
	dir := t.TempDir()
	old := unix.Umask(0o022)
	defer unix.Umask(old)
	r := openTestRoot(t, dir)
	if err := r.Mkdir("state", 0o711); err != nil {
		t.Fatal(err)
	}
	if err := r.Mkdir("state", 0o700); !errors.Is(err, os.ErrExist) {
		t.Fatalf("second mkdir: %v", err)
	}
	st, err := os.Stat(filepath.Join(dir, "state"))
	if err != nil || st.Mode().Perm() != 0o711 {
		t.Fatalf("mode %v, %v", st.Mode(), err)
	}
	writeFile(t, filepath.Join(dir, "state/1.preparing"), "x", 0o600)
	if err := r.Remove("state/1.preparing"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("state/1.preparing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("second remove: %v", err)
	}
	// A symlink is removed itself, never its target.
	writeFile(t, filepath.Join(dir, "target"), "x", 0o600)
	must(t, os.Symlink("../target", filepath.Join(dir, "state/l")))
	if err := r.Remove("state/l"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "target")); err != nil {
		t.Fatal(err)
	}
}

func TestRootFileID(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "1.lease"), "", 0o600)
	r := openTestRoot(t, dir)
	dev, ino, err := r.FileID("1.lease")
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(dir, "1.lease"), &st))
	if dev != st.Dev || ino != st.Ino {
		t.Fatalf("FileID %d/%d, stat %d/%d", dev, ino, st.Dev, st.Ino)
	}
}

func assertNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".tmp") || strings.HasPrefix(e.Name(), ".generation-") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
