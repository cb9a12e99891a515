package privsep

import (
	"os"
	"testing"
)

// The child's inherited copy must be the very file it runs: the same
// bytes in another sealed memfd, or any other file, are refused.
func TestRunningFile(t *testing.T) {
	exe, err := os.Open(selfExe)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	if err := runningFile(int(exe.Fd())); err != nil {
		t.Errorf("the running executable: %v", err)
	}
	copied, err := sealedCopy(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer copied.Close()
	if err := runningFile(copied.fd()); err == nil {
		t.Error("a sealed copy of the same bytes passed for the running executable")
	}
	other, err := os.CreateTemp(t.TempDir(), "other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := runningFile(int(other.Fd())); err == nil {
		t.Error("another file passed for the running executable")
	}
}
