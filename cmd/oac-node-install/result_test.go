package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/workflow"
)

// The --json result is read from the workflow's report by type: a fresh
// run changed the host, a resumed one too, a converged one did not; a
// refusal before any change is failed and unchanged, a failure after a
// change is failed and changed.
func TestResultDocumentFromTheReport(t *testing.T) {
	const journal = "/var/lib/oac-node-install/" + testID + "/install.journal"
	report := func(kind workflow.RunKind) *workflow.Report {
		return &workflow.Report{Journal: journal, Workflow: "install", State: workflow.InstallInstalled,
			Condition: workflow.Complete, Run: kind}
	}
	refusal := workflow.Refusef("this host runs another Core's node")
	changed := workflow.AfterChanges(errors.New("start the unit: failed"), []string{"the unit file"}, "")
	for _, tc := range []struct {
		name        string
		rep         *workflow.Report
		err         error
		code        int
		wantResult  string
		wantChanged bool
	}{
		{"a fresh install", report(workflow.RunFresh), nil, exitOK, resultChanged, true},
		{"a resumed run", report(workflow.RunResumed), nil, exitOK, resultResumed, true},
		{"the converged case", report(workflow.RunConverged), nil, exitOK, resultUnchanged, false},
		{"converged, the command on the host copied", func() *workflow.Report {
			r := report(workflow.RunConverged)
			r.Wrote = []string{"/etc/oac-node/installer.db", "/usr/local/sbin/oac-node-install"}
			return r
		}(), nil, exitOK, resultChanged, true},
		{"a refusal", nil, refusal, exitFailure, resultFailed, false},
		{"a failure after a change", report(workflow.RunFresh), changed, exitFailure, resultFailed, true},
		{"a command-line mistake", nil, usagef("--installation-id is required"), exitFailure, resultFailed, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newResultDocument("install")
			r.InstallationID = testID
			r.ran(tc.rep)
			f := failure{prefix: prefixInstall, changing: true}
			r.end(tc.err, tc.code, f.failureMessage(tc.err, nil))
			if r.Result != tc.wantResult || r.Changed != tc.wantChanged || r.ExitCode != tc.code || r.Format != 1 {
				t.Errorf("%+v, want result %s changed %v", r, tc.wantResult, tc.wantChanged)
			}
			if tc.rep != nil && (r.State != string(workflow.InstallInstalled) || r.Journal != journal || r.Condition != "complete") {
				t.Errorf("the report's state is not in the result: %+v", r)
			}
			if (tc.err == nil) != (r.Error == "") {
				t.Errorf("error %q for %v", r.Error, tc.err)
			}
			if workflow.NothingChanged(tc.err) && !strings.HasSuffix(r.Error, workflow.NothingWasChanged) {
				t.Errorf("a refusal's error does not say that nothing was changed: %q", r.Error)
			}
		})
	}
}

// jsonResult runs a command line with --json and decodes standard output,
// which must be exactly one result document.
func jsonResult(t *testing.T, host, stdin string, args ...string) (resultDocument, int, string) {
	t.Helper()
	code, out, errOut := runWithInput(t, host, stdin, args...)
	var r resultDocument
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil || dec.More() {
		t.Fatalf("stdout is not one result document (%v):\n%s\nstderr:\n%s", err, out, errOut)
	}
	return r, code, errOut
}

// A refusal with --json: the document says failed, nothing changed, with
// the message stderr prints (prefix aside) and the exit code. (Runs that
// reach systemd are tested in the test host: TestEndToEndFleet, whose
// hosts install, rerun converged, uninstall and uninstall again.)
func TestJSONResultOfARefusal(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: install and uninstall refuse to run without it before anything else")
	}
	base := []string{"--json", "--source-url", "https://console.example.com", "--core-url", "https://core.example.com",
		"--provider", "docker", "--installation-id", testID}
	t.Run("install", func(t *testing.T) {
		t.Setenv("OAC_ENROLLMENT_TOKEN", "x")
		host := t.TempDir()
		r, code, errOut := jsonResult(t, host, "tok\n", append(base, "--enrollment-token-stdin")...)
		want := resultDocument{Format: 1, Action: "install", InstallationID: testID, Result: resultFailed, ExitCode: exitFailure,
			Error: strings.TrimSuffix(strings.TrimPrefix(errOut, prefixInstall), "\n")}
		if r != want || code != exitFailure || !strings.HasSuffix(r.Error, "Nothing was changed.") || !strings.Contains(r.Error, "OAC_ENROLLMENT_TOKEN") {
			t.Errorf("exit %d, %+v\nwant %+v", code, r, want)
		}
		if names, err := readDirNames(host); err != nil || len(names) != 0 {
			t.Errorf("the host root holds %v (%v)", names, err)
		}
	})
	t.Run("a command-line mistake", func(t *testing.T) {
		r, code, _ := jsonResult(t, t.TempDir(), "", "--uninstall", "--json", "--installation-id", testID, "--provider", "docker")
		if r.Result != resultFailed || r.Changed || r.Action != "uninstall" || code != exitFailure || !strings.Contains(r.Error, "accepts only") {
			t.Errorf("exit %d, %+v", code, r)
		}
	})
}

// An uninstallation that kept the account for a rerun (or left the network
// of a stopped Docker Engine) succeeds, exit 0, but its document's
// condition is "incomplete", not "complete".
func TestResultDocumentOfAnIncompleteUninstall(t *testing.T) {
	r := newResultDocument("uninstall")
	r.ran(&workflow.Report{Journal: "/var/lib/oac-node-install/" + testID + "/uninstall.journal", Workflow: "uninstall",
		State: workflow.UninstallUninstalled, Condition: workflow.Incomplete, Run: workflow.RunFresh})
	r.end(nil, exitOK, "")
	var buf strings.Builder
	if err := r.write(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"condition": "incomplete"`) || r.ExitCode != exitOK || r.Result != resultChanged {
		t.Errorf("%s", buf.String())
	}
}
