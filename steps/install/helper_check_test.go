package install

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/openagentcore/oac-node-install/steps/record/launcher"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

func TestSameBytes(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 2*compareBlock/16) // two whole blocks
	last := bytes.Clone(big)
	last[len(last)-1] ^= 1
	for _, c := range []struct {
		name string
		a, b []byte
		want bool
	}{
		{"empty", nil, nil, true},
		{"equal, short", []byte("installer"), []byte("installer"), true},
		{"equal, whole blocks", big, bytes.Clone(big), true},
		{"equal, a block and a bit", big[:compareBlock+7], bytes.Clone(big[:compareBlock+7]), true},
		{"last byte differs", big, last, false},
		{"file one byte longer", big, append(bytes.Clone(big), 'x'), false},
		{"file one byte shorter", big, big[:len(big)-1], false},
		{"file empty", []byte("installer"), nil, false},
	} {
		// One-byte reads check that short reads are not taken for the end.
		got, err := sameBytes(c.a, iotest.OneByteReader(bytes.NewReader(c.b)))
		if err != nil || got != c.want {
			t.Errorf("%s: sameBytes = %v, %v; want %v", c.name, got, err, c.want)
		}
		if got, err := sameBytes(c.a, bytes.NewReader(c.b)); err != nil || got != c.want {
			t.Errorf("%s, whole reads: sameBytes = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if _, err := sameBytes([]byte("installer"), iotest.ErrReader(errors.New("boom"))); err == nil {
		t.Error("a failing read of the retained helper: no error")
	}
}

// helperCheck runs the installation's checks and returns the helper's.
func (f *installFixture) helperCheck() (NodeCheck, error) {
	f.t.Helper()
	checks, err := CheckNodeSteps(context.Background(), f.options(), nil)
	if err != nil {
		return NodeCheck{}, err
	}
	for _, c := range checks {
		if c.Step == string(workflow.InstallHelper) {
			return c, nil
		}
	}
	f.t.Fatalf("no helper check in %+v", checks)
	return NodeCheck{}, nil
}

func TestHelperCheckComparesEveryByte(t *testing.T) {
	f := newInstallFixture(t)
	f.helper = bytes.Repeat([]byte("installer bytes!"), (compareBlock+100)/16)
	// Not registered: a different helper is for the step to replace.
	if err := EnsureNodeRoot(f.home, nodeTestID, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	if c, err := f.helperCheck(); err != nil || c.Outcome != workflow.NotDone {
		t.Fatalf("check without a helper: %+v, %v", c, err)
	}
	if err := f.run("tok-123"); err != nil {
		t.Fatal(err)
	}
	if c, err := f.helperCheck(); err != nil || c.Outcome != workflow.Done {
		t.Fatalf("check of the retained helper: %+v, %v", c, err)
	}
	// Registered: a helper differing in its last byte, or one byte longer,
	// refuses.
	last := bytes.Clone(f.helper)
	last[len(last)-1] ^= 1
	for _, data := range [][]byte{last, append(bytes.Clone(f.helper), 0)} {
		if err := os.WriteFile(f.root(layout.HelperFile), data, 0o700); err != nil {
			t.Fatal(err)
		}
		_, err := f.helperCheck()
		var ref *workflow.Refusal
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), "keeps the installer") {
			t.Errorf("check of a different helper (%d bytes): %v, want a refusal", len(data), err)
		}
	}
}

// The helper step retains generation-preparer.pyz (0600, the launcher's
// bytes) beside the helper, and its check verifies it: missing or
// different before registration is not done and the step replaces it;
// after registration a missing one is written again, a different one (other
// bytes, another mode) refuses in the check and in the step.
func TestHelperStepRetainsTheLauncher(t *testing.T) {
	f := newInstallFixture(t)
	pyz := f.root(layout.HelperLauncherFile)
	// Not registered: a stale launcher and one of another mode are for the
	// step to replace.
	if err := EnsureNodeRoot(f.home, nodeTestID, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(f.root(layout.HelperFile), f.helper, 0o700)
	for _, c := range []struct {
		data []byte
		mode os.FileMode
	}{{[]byte("PK stale launcher"), 0o600}, {launcher.Bytes(), 0o644}} {
		os.Remove(pyz)
		if err := os.WriteFile(pyz, c.data, c.mode); err != nil {
			t.Fatal(err)
		}
		if ch, err := f.helperCheck(); err != nil || ch.Outcome != workflow.NotDone {
			t.Fatalf("check of an unregistered node's launcher (%d bytes, %o): %+v, %v", len(c.data), c.mode, ch, err)
		}
	}
	if err := f.run("tok-123"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(pyz)
	if got, _ := os.ReadFile(pyz); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 || !bytes.Equal(got, launcher.Bytes()) {
		t.Fatalf("retained launcher: %v %v, %d bytes", fi, err, len(got))
	}
	if c, err := f.helperCheck(); err != nil || c.Outcome != workflow.Done {
		t.Fatalf("check of the retained launcher: %+v, %v", c, err)
	}

	// Registered: a node installed before the launcher existed gets it.
	os.Remove(pyz)
	if c, err := f.helperCheck(); err != nil || c.Outcome != workflow.NotDone {
		t.Fatalf("check of a registered node without the launcher: %+v, %v", c, err)
	}
	if err := f.run(""); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(pyz); !bytes.Equal(got, launcher.Bytes()) {
		t.Fatalf("the launcher was not written for a registered node: %d bytes", len(got))
	}
	// Registered: another launcher, or the same bytes with another mode,
	// refuses; the file is left as it is.
	for _, c := range []struct {
		data []byte
		mode os.FileMode
	}{{append(bytes.Clone(launcher.Bytes()), 0), 0o600}, {launcher.Bytes(), 0o644}} {
		os.Remove(pyz)
		if err := os.WriteFile(pyz, c.data, c.mode); err != nil {
			t.Fatal(err)
		}
		_, err := f.helperCheck()
		var ref *workflow.Refusal
		if !errors.As(err, &ref) || !strings.Contains(err.Error(), "keeps the installer") || !strings.Contains(err.Error(), layout.HelperLauncherFile) {
			t.Errorf("check of a registered node's different launcher (%d bytes, %o): %v, want a refusal naming it", len(c.data), c.mode, err)
		}
		if c.mode == 0o600 {
			err = f.run("")
			if !errors.As(err, &ref) || !strings.Contains(err.Error(), "keeps the installer") {
				t.Errorf("rerun with a different launcher: %v, want a refusal", err)
			}
		}
		if got, _ := os.ReadFile(pyz); !bytes.Equal(got, c.data) {
			t.Errorf("the refused launcher was changed")
		}
	}
}
