package image

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestUnpack(t *testing.T) { BothWriteModes(t, testUnpack) }

func testUnpack(t *testing.T) {
	// More than one chunk, not a multiple of the chunk size nor of the
	// O_DIRECT block.
	content := make([]byte, 3*chunkSize+12345)
	rand.NewChaCha8([32]byte{'u', 'n', 'p', 'a', 'c', 'k'}).Read(content)
	dir := t.TempDir()
	gzPath := filepath.Join(dir, "runtime.tar.gz")
	os.WriteFile(gzPath, Gz(t, content), 0o600)
	target := filepath.Join(dir, "runtime.tar")
	if err := Unpack(gzPath, target, int64(len(content)), HexSum(content)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(target)
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("unpacked bytes differ (%v)", err)
	}
	if st, _ := os.Stat(target); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", st.Mode())
	}
	if names := OnlyFiles(t, dir); len(names) != 2 {
		t.Fatalf("files left: %v", names)
	}
	// Unpacking again replaces the verified file with equal bytes.
	if err := Unpack(gzPath, target, int64(len(content)), HexSum(content)); err != nil {
		t.Fatal(err)
	}
}

func TestUnpackRefuses(t *testing.T) { BothWriteModes(t, testUnpackRefuses) }

func testUnpackRefuses(t *testing.T) {
	content := []byte(strings.Repeat("runtime bytes ", 100000))
	good := Gz(t, content)
	size, sum := int64(len(content)), HexSum(content)
	truncated := good[:len(good)/2]
	corrupt := bytes.Clone(good)
	corrupt[len(corrupt)/2] ^= 0xff
	badCRC := bytes.Clone(good)
	badCRC[len(badCRC)-6] ^= 1
	cases := []struct {
		name  string
		gz    []byte
		size  int64
		sum   string
		want  error
		other bool // an error not of this package
	}{
		{name: "size smaller than the stream", gz: good, size: size - 1, sum: sum, want: ErrUnpackMismatch},
		{name: "size larger than the stream", gz: good, size: size + 1, sum: sum, want: ErrUnpackMismatch},
		{name: "sha256 differs", gz: good, size: size, sum: HexSum([]byte("x")), want: ErrUnpackMismatch},
		{name: "far too long (a gzip bomb stops early)", gz: Gz(t, make([]byte, 64<<20)), size: 1 << 20, sum: sum, want: ErrUnpackMismatch},
		{name: "truncated gzip", gz: truncated, size: size, sum: sum, other: true},
		{name: "truncated gzip, right size claimed", gz: Gz(t, content)[:len(good)-4], size: size, sum: sum, other: true},
		{name: "corrupt gzip", gz: corrupt, size: size, sum: sum, other: true},
		{name: "gzip checksum", gz: badCRC, size: size, sum: sum, other: true},
		{name: "not gzip", gz: content, size: size, sum: sum, other: true},
		{name: "empty file", gz: nil, size: size, sum: sum, other: true},
		{name: "malformed sha256", gz: good, size: size, sum: strings.ToUpper(sum), want: ErrBadDigest},
		{name: "zero size", gz: good, size: 0, sum: sum, want: ErrBadDigest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			gzPath := filepath.Join(dir, "runtime.tar.gz")
			os.WriteFile(gzPath, c.gz, 0o600)
			target := filepath.Join(dir, "runtime.tar")
			// An earlier, verified file stays as it was.
			os.WriteFile(target, []byte("previous"), 0o600)
			err := Unpack(gzPath, target, c.size, c.sum)
			switch {
			case err == nil:
				t.Fatal("accepted")
			case c.other && errorsIsAny(err):
				t.Fatalf("got %v, want a gunzip error", err)
			case !c.other && !errors.Is(err, c.want):
				t.Fatalf("got %v, want %v", err, c.want)
			}
			t.Log(err)
			if b, _ := os.ReadFile(target); string(b) != "previous" {
				t.Fatalf("target changed to %d bytes", len(b))
			}
			if names := OnlyFiles(t, dir); len(names) != 2 {
				t.Fatalf("files left: %v", names)
			}
		})
	}
}

func TestUnpackRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	content := []byte("x")
	real := filepath.Join(dir, "real.gz")
	os.WriteFile(real, Gz(t, content), 0o600)
	link := filepath.Join(dir, "runtime.tar.gz")
	os.Symlink(real, link)
	if err := Unpack(link, filepath.Join(dir, "runtime.tar"), 1, HexSum(content)); err == nil {
		t.Fatal("followed a symbolic link")
	}
}

func TestUnpackSmallSizes(t *testing.T) {
	BothWriteModes(t, func(t *testing.T) {
		for _, n := range []int{1, 511, dioAlign, dioAlign + 1, chunkSize, chunkSize + 1} {
			content := bytes.Repeat([]byte{'z'}, n)
			dir := t.TempDir()
			gzPath := filepath.Join(dir, "r.gz")
			os.WriteFile(gzPath, Gz(t, content), 0o600)
			target := filepath.Join(dir, "r.tar")
			if err := Unpack(gzPath, target, int64(n), HexSum(content)); err != nil {
				t.Fatalf("%d bytes: %v", n, err)
			}
			if got, _ := os.ReadFile(target); !bytes.Equal(got, content) {
				t.Fatalf("%d bytes: unpacked %d bytes that differ", n, len(got))
			}
		}
	})
}

func TestDirectIOAvailable(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := setDirect(f, true); err != nil {
		t.Logf("this file system refuses O_DIRECT (%v): the buffered path is used", err)
	} else {
		t.Log("O_DIRECT available on the test file system")
	}
	if b := alignedBuf(chunkSize); len(b) != chunkSize || cap(b) != chunkSize {
		t.Fatalf("aligned buffer of %d/%d bytes", len(b), cap(b))
	}
}

// errorsIsAny reports whether err is one of this package's refusals of the
// archive's contents (as opposed to an I/O failure).
func errorsIsAny(err error) bool {
	for _, e := range []error{ErrMalformed, ErrMissingBlob, ErrBlobMismatch, ErrPlatform, ErrInconsistent} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

func TestUnpackRemovesStaleTemps(t *testing.T) {
	content := []byte("runtime")
	dir := t.TempDir()
	gzPath := filepath.Join(dir, "runtime.tar.gz")
	os.WriteFile(gzPath, Gz(t, content), 0o600)
	stale := filepath.Join(dir, ".runtime.tar.tmp-123456")
	os.WriteFile(stale, []byte("left by a killed unpack"), 0o600)
	other := filepath.Join(dir, ".other.tmp-1")
	os.WriteFile(other, nil, 0o600)
	linked := filepath.Join(dir, ".runtime.tar.tmp-link")
	os.Symlink(other, linked)
	if err := Unpack(gzPath, filepath.Join(dir, "runtime.tar"), int64(len(content)), HexSum(content)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("stale temporary file kept")
	}
	for _, p := range []string{other, linked} {
		if _, err := os.Lstat(p); err != nil {
			t.Fatalf("%s removed", p)
		}
	}
}
