package install

import (
	"context"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/bookkeeping"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/workflow"
)

func recordedNetworks(t *testing.T, f *runFixture) []string {
	t.Helper()
	db, err := bookkeeping.Open(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nets, err := db.Networks(generationtest.InstallationID)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nets {
		names = append(names, n.Name)
	}
	return names
}

// The Docker network the service account made is recorded in root's
// bookkeeping (status lists it, uninstall removes it); a rerun on a host
// whose bookkeeping lacks it (an earlier installer's) records it, and then
// finds nothing to do.
func TestTheNetworkIsRecorded(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	want := "oac-node-" + generationtest.InstallationID
	if got := recordedNetworks(t, f); len(got) != 1 || got[0] != want {
		t.Fatalf("recorded networks %q, want %s", got, want)
	}
	db, err := bookkeeping.Open(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveNetwork(want); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := f.install(t, nil); err != nil {
		t.Fatalf("rerun: %v\n%s", err, f.out.String())
	}
	if got := recordedNetworks(t, f); len(got) != 1 || got[0] != want {
		t.Fatalf("after the rerun: recorded networks %q, want %s", got, want)
	}
	f.out.Reset()
	if _, err := f.install(t, nil); err != nil {
		t.Fatalf("second rerun: %v", err)
	}
	if !strings.Contains(f.out.String(), "No change") {
		t.Errorf("the second rerun changed something:\n%s", f.out.String())
	}
}

// A run cut off after the service account made the network and before
// root recorded it resumes in the network state's verification, which
// finds the network and completes the record.
func TestTheNetworkRecordIsCompletedByVerification(t *testing.T) {
	f := newHostFixture(t)
	if _, err := f.run(t); err != nil {
		t.Fatal(err)
	}
	want := "oac-node-" + generationtest.InstallationID
	db, err := bookkeeping.Open(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.RemoveNetwork(want); err != nil {
		t.Fatal(err)
	}
	db.Close()
	v, ok := Steps(f.env)[workflow.InstallNetwork].(workflow.Verifier)
	if !ok {
		t.Fatal("the network state's step is not a Verifier")
	}
	out, _, err := v.Verify(context.Background(), workflow.Facts{})
	if err != nil || out != workflow.Done {
		t.Fatalf("Verify = %v, %v", out, err)
	}
	db, err = bookkeeping.OpenReadOnly(f.host.Bookkeeping())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nets, err := db.Networks(generationtest.InstallationID)
	if err != nil || len(nets) != 1 || nets[0].Name != want {
		t.Errorf("recorded networks %+v, %v", nets, err)
	}
}
