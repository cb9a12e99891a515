package console

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// active.json is read through the safe-file layer: never through a
// symbolic link, never from a FIFO or device, and never more than its
// bound. Pointing it at /dev/zero must refuse at once, not hang.
func TestReadActiveRefusesUnsafeFiles(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, p string)
		why   error
	}{
		{"symlink to /dev/zero", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, safefile.ErrSymlink},
		{"symlink to a valid pointer", func(t *testing.T, p string) {
			if err := os.WriteFile(p+".real", []byte(`{"source_commit":"`+strings.Repeat("a", 40)+`"}`), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(filepath.Base(p)+".real", p); err != nil {
				t.Fatal(err)
			}
		}, safefile.ErrSymlink},
		{"fifo", func(t *testing.T, p string) {
			if err := unix.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}, safefile.ErrNotRegular},
		{"oversized", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte(strings.Repeat(" ", maxActive+1)), 0o644); err != nil {
				t.Fatal(err)
			}
		}, safefile.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, filepath.Join(dir, ActiveName))
			done := make(chan error, 1)
			go func() {
				_, err := ReadActive(dir)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, safefile.ErrUnsafe) || !errors.Is(err, tt.why) {
					t.Fatalf("got %v, want a refusal matching %v", err, tt.why)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("ReadActive blocked")
			}
		})
	}
}
