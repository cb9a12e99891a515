package privsep

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCaptureIsSealedCopyOfSelf(t *testing.T) {
	b := captured(t)
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(self)
	if b.SHA256() != hex.EncodeToString(sum[:]) || b.Size() != int64(len(self)) {
		t.Errorf("captured %s (%d bytes), executable %x (%d bytes)", b.SHA256(), b.Size(), sum, len(self))
	}
	if got := b.Bytes(); string(got) != string(self) {
		t.Error("Bytes differ from the executable")
	}
	read, err := io.ReadAll(b.Reader())
	if err != nil || string(read) != string(self) {
		t.Errorf("Reader: %v", err)
	}
	got, err := unix.FcntlInt(uintptr(b.fd()), unix.F_GET_SEALS, 0)
	if err != nil || got&seals != seals {
		t.Errorf("seals %#x (%v), want %#x", got, err, seals)
	}
}

func TestCapturedCopyCannotChange(t *testing.T) {
	b := captured(t)
	path := "/proc/self/fd/" + strconv.Itoa(b.fd())
	for _, tc := range []struct {
		name string
		try  func() error
	}{
		{"write", func() error {
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = f.Write([]byte("x"))
			return err
		}},
		{"truncate", func() error { return unix.Ftruncate(b.fd(), 1) }},
		{"grow", func() error { return unix.Ftruncate(b.fd(), b.Size()+1) }},
		{"remove seals", func() error {
			_, err := unix.FcntlInt(uintptr(b.fd()), unix.F_ADD_SEALS, unix.F_SEAL_FUTURE_WRITE)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.try(); !errors.Is(err, unix.EPERM) {
				t.Errorf("error %v, want EPERM", err)
			}
		})
	}
}

func TestBinaryClose(t *testing.T) {
	b, err := Capture()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
