package docker

import (
	"errors"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestClassifyDial(t *testing.T) {
	op := func(errno syscall.Errno) error {
		return &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("connect", errno)}
	}
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"socket missing", op(syscall.ENOENT), ErrUnavailable},
		{"daemon not running", op(syscall.ECONNREFUSED), ErrUnavailable},
		{"not a socket", op(syscall.ENOTSOCK), ErrUnavailable},
		{"permission", op(syscall.EACCES), ErrPermission},
		{"other", op(syscall.EIO), ErrUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := classifyDial("/run/docker.sock", c.err)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			// The Docker client rewrites errors mentioning these phrases
			// into its own text, which would lose the classification.
			for _, s := range []string{"connection refused", "dial unix"} {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("%q mentions %q", err, s)
				}
			}
		})
	}
}

func TestSanitize(t *testing.T) {
	if got := sanitize("bad\x1b[31m\nline\u0085"); got != "bad?[31m?line?" {
		t.Fatalf("got %q", got)
	}
	long := make([]byte, 1000)
	for i := range long {
		long[i] = 'a'
	}
	if got := sanitize(string(long)); len(got) > 310 {
		t.Fatalf("not bounded: %d", len(got))
	}
}
