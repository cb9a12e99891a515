package privsep

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReaderMessages(t *testing.T) {
	for _, tc := range []struct {
		name       string
		lines      []string
		exit       bool // the child exited with status 0
		wantEvents []Event
		wantValue  string
		wantIs     error
		wantClass  string
	}{
		{
			name:       "progress then result",
			lines:      []string{`{"type":"phase","text":"Download files"}`, `{"type":"line","text":"50%\u001b[K"}`, `{"type":"result","result":{"a":1}}`},
			exit:       true,
			wantEvents: []Event{{Kind: EventPhase, Text: "Download files"}, {Kind: EventLine, Text: "50%?[K"}},
			wantValue:  `{"a":1}`,
		},
		{
			name: "transfer progress",
			lines: []string{`{"type":"progress","text":"images/runtime.tar.gz","total":100}`, `{"type":"progress","text":"a\u001bb","done":100,"total":100}`,
				`{"type":"result","result":1}`},
			exit:       true,
			wantEvents: []Event{{Kind: EventTransfer, Text: "images/runtime.tar.gz", Total: 100}, {Kind: EventTransfer, Text: "a?b", Done: 100, Total: 100}},
			wantValue:  `1`,
		},
		{name: "progress past the total", lines: []string{`{"type":"progress","text":"x","done":101,"total":100}`}, exit: true, wantIs: ErrProtocol},
		{name: "progress without a total", lines: []string{`{"type":"progress","text":"x"}`}, exit: true, wantIs: ErrProtocol},
		{name: "error", lines: []string{`{"type":"error","class":"transfer","text":"HTTP 503"}`}, wantClass: ClassTransfer},
		{name: "no final message", lines: []string{`{"type":"line","text":"x"}`}, exit: true, wantIs: ErrNoResult, wantEvents: []Event{{Kind: EventLine, Text: "x"}}},
		{name: "result but failed exit", lines: []string{`{"type":"result","result":1}`}, wantIs: ErrNoResult},
		{name: "not JSON", lines: []string{`hello`}, exit: true, wantIs: ErrProtocol},
		{name: "unknown field", lines: []string{`{"type":"line","text":"x","extra":1}`}, exit: true, wantIs: ErrProtocol},
		{name: "unknown type", lines: []string{`{"type":"\u001b"}`}, exit: true, wantIs: ErrProtocol},
		{name: "result without value", lines: []string{`{"type":"result"}`}, exit: true, wantIs: ErrProtocol},
		{name: "message after final", lines: []string{`{"type":"result","result":1}`, `{"type":"line","text":"x"}`}, exit: true, wantIs: ErrProtocol},
		{name: "line too long", lines: []string{`{"type":"line","text":"` + strings.Repeat("x", maxMessage) + `"}`}, exit: true, wantIs: ErrProtocol},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var events []Event
			rd := &reader{role: "test", progress: func(e Event) { events = append(events, e) }}
			rd.read(strings.NewReader(strings.Join(tc.lines, "\n") + "\n"))
			state := processState(t, tc.exit)
			res, err := rd.outcome(state)
			if !slices.Equal(events, tc.wantEvents) {
				t.Errorf("events %+v, want %+v", events, tc.wantEvents)
			}
			switch {
			case tc.wantIs != nil:
				if !errors.Is(err, tc.wantIs) {
					t.Errorf("error %v, want %v", err, tc.wantIs)
				}
			case tc.wantClass != "":
				var ce *ChildError
				if !errors.As(err, &ce) || ce.Class() != tc.wantClass {
					t.Errorf("error %v, want class %s", err, tc.wantClass)
				}
			default:
				if err != nil || string(res.Value) != tc.wantValue {
					t.Errorf("result %s, %v; want %s", res.Value, err, tc.wantValue)
				}
			}
		})
	}
}

// processState returns the state of a real process that exited with status
// 0 (ok) or 1.
func processState(t *testing.T, ok bool) *os.ProcessState {
	t.Helper()
	path := "/bin/false"
	if ok {
		path = "/bin/true"
	}
	p, err := os.StartProcess(path, []string{path}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := p.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestClassOf(t *testing.T) {
	base := errors.New("x")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", base, ClassInternal},
		{"transfer", WithClass(ClassTransfer, base), ClassTransfer},
		{"wrapped refused", fmt.Errorf("step: %w", WithClass(ClassRefused, base)), ClassRefused},
		{"own type", ownClass{}, ClassTransfer},
		{"child error", &ChildError{class: ClassRefused}, ClassRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClassOf(tc.err); got != tc.want {
				t.Errorf("ClassOf = %q, want %q", got, tc.want)
			}
		})
	}
	if WithClass(ClassTransfer, nil) != nil {
		t.Error("WithClass(nil) is not nil")
	}
	if !errors.Is(WithClass(ClassTransfer, base), base) {
		t.Error("WithClass hides the wrapped error")
	}
}

type ownClass struct{}

func (ownClass) Error() string { return "own" }
func (ownClass) Class() string { return ClassTransfer }

func TestCheckCredentials(t *testing.T) {
	groups, _ := unix.Getgroups()
	for _, tc := range []struct {
		name    string
		env     envelope
		wantErr bool
		wantIs  error
	}{
		{name: "asked for root", env: envelope{UID: 0, GID: 5}, wantErr: true, wantIs: ErrRoot},
		{name: "asked for group 0", env: envelope{UID: 5, GID: 0}, wantErr: true, wantIs: ErrRoot},
		{name: "other uid", env: envelope{UID: os.Getuid() + 1, GID: os.Getgid() + 1, Groups: groups}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCredentials(tc.env)
			if (err != nil) != tc.wantErr || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) {
				t.Errorf("error %v, want %v", err, tc.wantIs)
			}
		})
	}
}

func TestSameSet(t *testing.T) {
	for _, tc := range []struct {
		a, b []int
		want bool
	}{
		{nil, []int{}, true},
		{[]int{3, 1, 2}, []int{1, 2, 3, 3}, true},
		{[]int{1}, []int{1, 2}, false},
		{[]int{0}, nil, false},
	} {
		if got := sameSet(tc.a, tc.b); got != tc.want {
			t.Errorf("sameSet(%v, %v) = %v", tc.a, tc.b, got)
		}
	}
}
