package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/workflow"
)

// The operator reads "Nothing was changed." once, at the end of a refusal
// of a command that changes the host and only when nothing changed; a
// failure after a change says what changed instead.
func TestReportSaysNothingWasChangedOnlyWhenNothingWas(t *testing.T) {
	ref := &workflow.Refusal{Err: errors.New("the Docker network oac-node-x exists and is not labelled"), Hint: "Remove it first"}
	install := failure{prefix: prefixInstall, path: "oac-node-install", changing: true}
	status := failure{prefix: prefixStatus, path: "oac-node-install status"}
	for _, tc := range []struct {
		name string
		f    failure
		err  error
		want string
	}{
		{"a refusal before any change", install, workflow.Unchanged(ref),
			"Installation failed: the Docker network oac-node-x exists and is not labelled. Remove it first. Nothing was changed.\n"},
		{"a refusal after a change", install,
			workflow.AfterChanges(ref, []string{"the install journal /j (created)", "the steps completed in this run: account, group"}, "Rerun the same command."),
			"Installation failed: the Docker network oac-node-x exists and is not labelled. Remove it first. Changed before the failure: the install journal /j (created); the steps completed in this run: account, group. Rerun the same command.\n"},
		{"a refusal that says it itself", install, errors.New("installing a node requires root; rerun the same command with sudo. Nothing was changed."),
			"Installation failed: installing a node requires root; rerun the same command with sudo. Nothing was changed.\n"},
		{"a failure", install, errors.New("disk full"), "Installation failed: disk full\n"},
		{"a command that changes nothing", status, ref, "status: the Docker network oac-node-x exists and is not labelled. Remove it first\n"},
		{"the generation helper's refusal", failure{prefix: prefixHelper, path: "oac-node-install", changing: true},
			&workflow.Refusal{Err: errors.New("lease of generation 3: held"), Hint: "Inspect it with `oac-node-install leases`"},
			"Generation helper failed: lease of generation 3: held. Inspect it with `oac-node-install leases`. Nothing was changed.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if code := tc.f.report(&out, tc.err, nil); code == exitOK {
				t.Fatalf("exit %d", code)
			}
			if out.String() != tc.want {
				t.Errorf("printed %q\nwant    %q", out.String(), tc.want)
			}
			if n := strings.Count(out.String(), "Nothing was changed."); n > 1 {
				t.Errorf("said %d times", n)
			}
		})
	}
}
