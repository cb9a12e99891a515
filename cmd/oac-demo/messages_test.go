package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestMessagesNameTheStateDirectory: the command oac-demo names for
// removing a demo is make demo-uninstall only for the default state
// directory; with another --state it is oac-demo down with that --state
// (make demo-uninstall would tear down the default demo instead), quoted
// for the shell.
func TestMessagesNameTheStateDirectory(t *testing.T) {
	for _, tc := range []struct {
		state, bin, want string
	}{
		{DefaultState, "/opt/demo/bin", "make demo-uninstall"},
		{"/srv/demo-2", "/opt/demo/bin", "/opt/demo/bin/oac-demo down --state /srv/demo-2"},
		{"/srv/my demo's", "/opt/demo bin", `'/opt/demo bin/oac-demo' down --state '/srv/my demo'\''s'`},
	} {
		d := &demo{options: options{state: tc.state, bin: tc.bin}}
		if got := d.downCommand(); got != tc.want {
			t.Errorf("--state %q --bin %q: %q, want %q", tc.state, tc.bin, got, tc.want)
		}
	}

	// A demo a previous up left part-way in another state directory:
	// up's refusal names the command that removes that one.
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	d := &demo{options: options{state: dir, bin: "/opt/demo/bin"}, out: &out, errOut: &errOut}
	if err := d.saveState(&state{Phase: phaseStarting}); err != nil {
		t.Fatal(err)
	}
	msg, err := d.alreadyUp()
	want := "run `/opt/demo/bin/oac-demo down --state " + dir + "` first"
	if err != nil || !strings.Contains(msg, want) || strings.Contains(msg, "make demo-uninstall") {
		t.Errorf("alreadyUp: %q (%v), want it to name %q", msg, err, want)
	}
}
