package download

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	avail, err := Available(dir)
	if err != nil || avail <= 0 {
		t.Fatalf("available %d, %v", avail, err)
	}
	if err := CheckSpace(dir, 1); err != nil {
		t.Fatalf("one byte: %v", err)
	}
	err = CheckSpace(dir, avail+(1<<40))
	var se *SpaceError
	if !errors.Is(err, ErrNoSpace) || !errors.As(err, &se) || errors.Is(err, ErrTransfer) {
		t.Fatalf("error %v, want a SpaceError", err)
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, "MiB needed") || !strings.Contains(msg, "MiB available") {
		t.Fatalf("message does not name the directory and sizes: %s", msg)
	}
	if err := CheckSpace(filepath.Join(dir, "missing"), 1); err == nil || errors.Is(err, ErrNoSpace) {
		t.Fatalf("missing directory: %v", err)
	}
}

func TestMissing(t *testing.T) {
	target := targetIn(t)
	cases := []struct {
		name  string
		setup func()
		want  int64
	}{
		{"nothing yet", func() {}, 1000},
		{"part kept", func() { writeFile(t, PartPath(target), make([]byte, 300)) }, 700},
		{"part too long", func() { writeFile(t, PartPath(target), make([]byte, 2000)) }, 1000},
		{"target present", func() { writeFile(t, target, []byte("x")) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			got, err := Missing(target, 1000)
			if err != nil || got != tc.want {
				t.Fatalf("got %d, %v; want %d", got, err, tc.want)
			}
		})
	}
	os.Remove(target)
}
