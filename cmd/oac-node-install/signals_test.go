package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// TestSignalChild is the command's signal handling when a signal test
// re-executes the test binary: it watches the signals as the command does,
// sends itself SIGHUP and, if that has not cancelled it within a second,
// SIGINT, and exits with the code the command would exit with for the
// signal that cancelled it. (Sent together, the two may reach the runtime
// in either order: each can land on another thread.)
func TestSignalChild(t *testing.T) {
	if os.Getenv("OAC_SIGNAL_CHILD") == "" {
		t.Skip("runs only as the signal tests' child process")
	}
	ctx, stop := watchSignals(context.Background(), nil)
	defer stop()
	syscall.Kill(os.Getpid(), syscall.SIGHUP)
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		syscall.Kill(os.Getpid(), syscall.SIGINT)
	}
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

// An interrupted installation ends by naming what continues it: before the
// node has its credential, the same command with its enrollment token;
// once the host records the node and it registered or began to (its
// identity written, Core's answer maybe lost), the install command without
// a token, from this run's own flags, which is an install command of the
// same options. The token is never printed.
func TestTheInterruptionOfAnInstallNamesTheCommandThatContinuesIt(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "core ca.pem")
	must(t, os.WriteFile(ca, []byte("a CA\n"), 0o644))
	args := []string{"--enrollment-token-stdin", "--source-url", "https://console.example.com", "--core-url", "https://core.example.com",
		"--core-ca", ca, "--provider", "docker", "--installation-id", testID}
	parse := func(t *testing.T, args []string) *installerFlags {
		t.Helper()
		f := &installerFlags{}
		fs := pflag.NewFlagSet("oac-node-install", pflag.ContinueOnError)
		f.bind(fs)
		must(t, fs.Parse(args))
		must(t, f.validate(fs))
		return f
	}
	withToken := "Interrupted. Nothing is lost: rerun the same command, with its enrollment token, to continue.\n"
	named := "Interrupted. Nothing is lost: to continue, run `sudo " + programName() +
		" --source-url https://console.example.com --core-url https://core.example.com --core-ca '" + ca + "' --provider docker --installation-id " + testID +
		"` (the node has its credential: no enrollment token is needed), or rerun the same command.\n"
	record := func(t *testing.T, h layout.Host) {
		must(t, os.MkdirAll(h.EtcDir(), 0o755))
		must(t, os.WriteFile(h.Record(testID), []byte(`{"format": 1}`+"\n"), 0o644))
	}
	stoppedAt := func(t *testing.T, h layout.Host, step string) {
		must(t, os.MkdirAll(h.JournalDir(testID), 0o700))
		runWorkflow(t, workflow.InstallDefinition(), install.JournalPath(h, testID), workflow.Binding{Version: workflow.Version, InstallationID: testID}, step)
	}
	for _, tc := range []struct {
		name  string
		setup func(*testing.T, layout.Host)
		want  string
	}{
		{"before any record", func(*testing.T, layout.Host) {}, withToken},
		{"before the register step", func(t *testing.T, h layout.Host) { record(t, h); stoppedAt(t, h, "downloads") }, withToken},
		{"in the register step", func(t *testing.T, h layout.Host) { record(t, h); stoppedAt(t, h, "register") }, named},
		{"after the register step", func(t *testing.T, h layout.Host) { record(t, h); stoppedAt(t, h, "start") }, named},
		{"a registered node's rerun", func(t *testing.T, h layout.Host) {
			record(t, h)
			db, err := bookkeeping.Open(h.Bookkeeping())
			must(t, err)
			must(t, db.PutInstallation(bookkeeping.Installation{ID: testID, Provider: "docker", Registered: true}))
			must(t, db.Close())
			stoppedAt(t, h, "account")
		}, named},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := layout.Host{Root: t.TempDir()}
			tc.setup(t, h)
			f := parse(t, args)
			err := &interruptedRun{err: context.Canceled, next: resumeAdvice(h, f)}
			var out bytes.Buffer
			code := failure{prefix: prefixInstall, path: "oac-node-install", changing: true}.report(&out, err, &signalError{syscall.SIGINT})
			if code != 130 || out.String() != tc.want {
				t.Fatalf("exit %d, printed\n%q\nwant\n%q", code, out.String(), tc.want)
			}
			if tc.want == withToken {
				return
			}
			// The command named, without its quotes, is this install
			// command less its token.
			line := strings.TrimSuffix(strings.SplitN(out.String(), "`", 3)[1], "`")
			words := strings.Fields(strings.ReplaceAll(line, "'"+ca+"'", "CA"))
			for i, w := range words {
				if w == "CA" {
					words[i] = ca
				}
			}
			again := parse(t, words[2:])
			want, got := parse(t, args), again
			want.tokenStdin = false
			if !reflect.DeepEqual(got, want) {
				t.Errorf("the command %q parses to %+v, want %+v", line, got, want)
			}
		})
	}
}
