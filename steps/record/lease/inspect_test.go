package lease

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestInspectStates(t *testing.T) {
	dir := genDir(t)
	type want struct {
		state   LeaseState
		records RecordState
		stuck   bool
	}
	expect := map[int64]want{}

	// 1: prepared, idle.
	initLease(t, dir, 1)
	publishFinal(t, dir, 1)
	expect[1] = want{state: StateOK, records: RecordState{Prepared: true}}

	// 2: interrupted initialization.
	writeFile(t, filepath.Join(dir, "2.lease"), nil, 0o600)
	expect[2] = want{state: StateIdentityMissing, stuck: true}

	// 3: preparing, import started.
	initLease(t, dir, 3)
	if err := WritePreparing(dir, Preparing{Identity: testID(3), ImportStarted: true}, uid); err != nil {
		t.Fatal(err)
	}
	expect[3] = want{state: StateOK, records: RecordState{Preparing: true, ImportStarted: true}, stuck: true}

	// 4: collecting, native removal not complete.
	initLease(t, dir, 4)
	publishFinal(t, dir, 4)
	WriteCollecting(dir, Collecting{Identity: testID(4)}, uid)
	expect[4] = want{state: StateOK, records: RecordState{Prepared: true, Collecting: true}, stuck: true}

	// 5: dropped after a complete collection.
	initLease(t, dir, 5)
	publishFinal(t, dir, 5)
	WriteCollecting(dir, Collecting{Identity: testID(5), NativeComplete: true}, uid)
	WriteDropped(dir, testID(5), uid)
	expect[5] = want{state: StateOK, records: RecordState{Prepared: true, Collecting: true, NativeComplete: true, Dropped: true}}

	// 6: replaced lease inode.
	initLease(t, dir, 6)
	writeFile(t, filepath.Join(dir, "new"), nil, 0o600)
	os.Rename(filepath.Join(dir, "new"), filepath.Join(dir, "6.lease"))
	expect[6] = want{state: StateInodeReplaced, stuck: true}

	// 7: lease mode 0644.
	initLease(t, dir, 7)
	os.Chmod(filepath.Join(dir, "7.lease"), 0o644)
	expect[7] = want{state: StateUnsafe, stuck: true}

	// 8: identity of another specification than the plan.
	initLease(t, dir, 8)
	other := testID(8)
	other.SpecificationDigest = strings.Repeat("b", 64)
	WritePreparing(dir, Preparing{Identity: other}, uid)
	expect[8] = want{state: StateMismatch, records: RecordState{Preparing: true}, stuck: true}

	// 9: identity with an unknown key.
	initLease(t, dir, 9)
	data, _ := os.ReadFile(filepath.Join(dir, "9.lease-identity"))
	writeFile(t, filepath.Join(dir, "9.lease-identity"), []byte(strings.Replace(string(data), "{", `{"x": 1,`, 1)), 0o600)
	expect[9] = want{state: StateMalformed, stuck: true}

	// 10: records without a lease.
	publishFinal(t, dir, 10)
	expect[10] = want{state: StateAbsent, records: RecordState{Prepared: true}, stuck: true}

	// 11: identity without its lease.
	initLease(t, dir, 11)
	os.Remove(filepath.Join(dir, "11.lease"))
	expect[11] = want{state: StateAbsent, stuck: true}

	// 12: a FIFO where the plan must be is reported, not blocked on.
	initLease(t, dir, 12)
	unix.Mkfifo(filepath.Join(dir, "12.preparing"), 0o600)
	expect[12] = want{state: StateOK, stuck: true}

	// Files Inspect ignores.
	writeFile(t, filepath.Join(dir, ".generation-abc"), nil, 0o600)
	writeFile(t, filepath.Join(dir, "01.lease"), nil, 0o600)
	writeFile(t, filepath.Join(dir, "notes.json"), nil, 0o600)

	reports, err := Inspect(dir, uid)
	if err != nil {
		t.Fatal(err)
	}
	if len(reports) != len(expect) {
		t.Fatalf("%d reports, want %d", len(reports), len(expect))
	}
	for i, r := range reports {
		if r.Generation != int64(i+1) {
			t.Fatalf("report %d is generation %d", i, r.Generation)
		}
		w := expect[r.Generation]
		t.Run(r.Lease.Path, func(t *testing.T) {
			if r.Lease.State != w.state {
				t.Errorf("state %s (%s), want %s", r.Lease.State, r.Lease.Reason, w.state)
			}
			c := r.Records
			c.Problems = nil
			got, _ := json.Marshal(c)
			if wr, _ := json.Marshal(w.records); string(got) != string(wr) {
				t.Errorf("records %+v, want %+v", got, w.records)
			}
			if (len(r.Next) > 0) != w.stuck {
				t.Errorf("next steps %q, stuck %v", r.Next, w.stuck)
			}
			for _, step := range r.Next {
				if strings.Contains(step, "rm ") || strings.Contains(step, "unlink") {
					t.Errorf("a next step removes files: %q", step)
				}
			}
			if r.Holders == nil {
				t.Error("holders is nil, want an empty list")
			}
		})
	}
	if len(reports[11].Records.Problems) != 1 {
		t.Errorf("FIFO plan problems %+v", reports[11].Records.Problems)
	}
	if !strings.Contains(strings.Join(reports[1].Next, "\n"), "ls -li") {
		t.Errorf("identity-missing hints %q lack the ls -li check", reports[1].Next)
	}
	if _, err := json.Marshal(reports); err != nil {
		t.Fatal(err)
	}
}

func TestInspectForInstallation(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 1)
	reports, err := InspectFor(dir, uid, "11111111-2222-4333-8444-555555555555")
	if err != nil {
		t.Fatal(err)
	}
	if reports[0].Lease.State != StateMismatch {
		t.Errorf("state %s, want mismatch", reports[0].Lease.State)
	}
}

func TestParseProcLocks(t *testing.T) {
	data := []byte(`1: FLOCK  ADVISORY  WRITE 1435 fe:00:762101 0 EOF
1: -> FLOCK  ADVISORY  WRITE 1500 fe:00:762101 0 EOF
2: FLOCK  ADVISORY  READ 1420 103:02:99 0 EOF
3: FLOCK  ADVISORY  READ 1421 103:02:99 0 EOF
4: POSIX  ADVISORY  WRITE 17 fe:00:5 0 EOF
7: OFDLCK ADVISORY  READ -1 00:06:3 0 EOF
garbage
`)
	got := parseProcLocks(data, map[string]bool{"fe:00:762101": true, "103:02:99": true})
	if len(got) != 2 {
		t.Fatalf("files %v", got)
	}
	a := got["fe:00:762101"]
	if len(a) != 2 || a[0].pid != 1435 || a[0].mode != ModeExclusive || a[0].waiting || !a[1].waiting || a[1].pid != 1500 {
		t.Errorf("fe:00:762101 = %+v", a)
	}
	b := got["103:02:99"]
	if len(b) != 2 || b[0].mode != ModeShared || b[1].pid != 1421 {
		t.Errorf("103:02:99 = %+v", b)
	}
	if k := lockKey(unix.Mkdev(0xfe, 0), 762101); k != "fe:00:762101" {
		t.Errorf("lockKey = %s", k)
	}
	if k := lockKey(unix.Mkdev(259, 2), 99); k != "103:02:99" {
		t.Errorf("lockKey = %s", k)
	}
}

// The node's base generation is configured by provider.json: a lease
// without <g>.json is not stuck there, but is for any other generation.
func TestInspectNodeBaseGeneration(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 1)
	base, err := InspectNode(dir, uid, "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !base[0].Records.Base || len(base[0].Next) != 0 {
		t.Fatalf("base generation: %+v", base[0])
	}
	other, err := InspectNode(dir, uid, "", 2)
	if err != nil {
		t.Fatal(err)
	}
	if other[0].Records.Base || len(other[0].Next) == 0 {
		t.Fatalf("a generation that is not the base: %+v", other[0])
	}
}

// TestPreparationHoldingTheLease: the next steps of a planned generation
// whose lease is held exclusively name a running preparation, not a
// collection.
func TestPreparationHoldingTheLease(t *testing.T) {
	dir := genDir(t)
	initLease(t, dir, 3)
	if err := WritePreparing(dir, Preparing{Identity: testID(3)}, uid); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "3.lease"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	reports, err := Inspect(dir, uid)
	if err != nil {
		t.Fatal(err)
	}
	next := strings.Join(reports[0].Next, "\n")
	if !strings.Contains(next, fmt.Sprintf("PID %d", os.Getpid())) || !strings.Contains(next, "preparation is running") || strings.Contains(next, "collection or repair is running") {
		t.Errorf("next steps %q", reports[0].Next)
	}
}
