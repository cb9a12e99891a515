package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestSignalChild is the command's signal handling when a signal test
// re-executes the test binary: it watches the signals as the command does,
// sends itself SIGHUP and then SIGINT, and exits with the code the command
// would exit with for the signal that cancelled it.
func TestSignalChild(t *testing.T) {
	if os.Getenv("OAC_SIGNAL_CHILD") == "" {
		t.Skip("runs only as the signal tests' child process")
	}
	ctx, stop := watchSignals(context.Background())
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	syscall.Kill(os.Getpid(), syscall.SIGINT)
	<-ctx.Done()
	// A signal the command does not watch would have killed the process
	// before this point.
	os.Exit(interruption(ctx).exitCode())
}

// TestSignals checks the exit code of a run cancelled by SIGHUP, and that a
// SIGHUP ignored when the command starts (under nohup) stays ignored: the
// same SIGHUP then neither cancels the run nor kills it, and the SIGINT after
// it does, with 130.
func TestSignals(t *testing.T) {
	nohup, err := exec.LookPath("nohup")
	if err != nil {
		t.Skip("needs nohup to start the command with SIGHUP ignored")
	}
	for _, tc := range []struct {
		name string
		argv []string
		want int
	}{
		{"SIGHUP watched", []string{os.Args[0]}, 129},
		{"SIGHUP ignored under nohup", []string{nohup, os.Args[0]}, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.argv[0], append(tc.argv[1:], "-test.run=^TestSignalChild$", "-test.count=1")...)
			cmd.Env = append(os.Environ(), "OAC_SIGNAL_CHILD=1")
			cmd.Dir = t.TempDir() // nohup may write nohup.out here
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != tc.want {
				t.Fatalf("err %v, want exit %d\n%s", err, tc.want, out)
			}
		})
	}
}

func TestInterruptedExitCodes(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		want int
	}{{syscall.SIGINT, 130}, {syscall.SIGHUP, 129}, {syscall.SIGTERM, 143}} {
		if got := (&signalError{tc.sig}).exitCode(); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.sig, got, tc.want)
		}
	}
}
