package asaccount

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/testsupport/fakehost"
	"github.com/openagentcore/oac-node-install/workflow"
)

// lockedBuffer is an Output the child's progress lines reach from the
// reader's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// accountHost is a host root whose service account exists, with its home,
// and the Children of a run on it, closed when the test ends.
type accountHost struct {
	h        *fakehost.Host
	children *Children
	out      *lockedBuffer
}

func newAccountHost(t *testing.T) *accountHost {
	t.Helper()
	// The home's parents, made here, let the account through.
	h := fakehost.New(t, "oac-asaccount-", filepath.Dir(layout.HomeRel))
	if err := h.Accounts.CreateServiceAccount(context.Background(), "/usr/sbin/nologin"); err != nil {
		t.Fatal(err)
	}
	u, err := h.DBs.LookupUser(layout.Account)
	if err != nil {
		t.Fatal(err)
	}
	home := h.Host.Home()
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(home, u.UID, u.GID); err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	c := NewChildren(privsep.Options{Binary: h.Binary, Home: home, Output: out}, h.DBs)
	t.Cleanup(func() { c.Close() })
	return &accountHost{h: h, children: c, out: out}
}

// testData is the test workflow's Data: a secret for the step "secret"'s
// run only.
type testData struct {
	run    Runner
	secret string
}

func (d testData) ChildInput(state workflow.State, verify bool) any {
	if state == "secret" && !verify {
		return testInput{Secret: d.secret}
	}
	return nil
}

func (d testData) Child() Runner { return d.run }

func (a *accountHost) step(state workflow.State) Step {
	return Step{Workflow: "t", State: state, D: testData{run: a.children.Run, secret: "s3cret"}}
}

// The steps of a run share one child as long as the account's ids and
// groups stay; a group added starts a new one, Close ends it. The input
// reaches the child for the step it is given to only, and the child's
// progress lines reach the Output.
func TestChildrenRunTheStepsOfARunInOneChild(t *testing.T) {
	a := newAccountHost(t)
	ctx := context.Background()
	first, err := a.step("one").Run(ctx, workflow.Facts{"fact": "kept"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.step("secret").Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Event != "ran" || first.Facts["pid"] == "" || first.Facts["pid"] != second.Facts["pid"] {
		t.Errorf("the steps ran in %q and %q, want one child", first.Facts["pid"], second.Facts["pid"])
	}
	if first.Facts["secret"] != "" || second.Facts["secret"] != "s3cret" {
		t.Errorf("the input reached the child as %q and %q, want only for the step it is given to", first.Facts["secret"], second.Facts["secret"])
	}
	if got := a.out.String(); !strings.Contains(got, "step one\n") || !strings.Contains(got, "step secret\n") {
		t.Errorf("the child's progress lines: %q", got)
	}
	out, res, err := a.step("verified").Verify(ctx, nil)
	if err != nil || out != workflow.Done || res.Facts["pid"] != first.Facts["pid"] {
		t.Errorf("verify: %v %+v %v", out, res, err)
	}

	if err := a.h.Accounts.AddToGroup(ctx, "docker"); err != nil {
		t.Fatal(err)
	}
	grouped, err := a.step("two").Run(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if grouped.Facts["pid"] == first.Facts["pid"] {
		t.Error("the account joined a group, but the step ran in the child started without it")
	}
	if err := a.children.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	again, err := a.step("three").Run(ctx, nil)
	if err != nil || again.Facts["pid"] == grouped.Facts["pid"] {
		t.Errorf("after Close the step ran in %q (%v), want a new child", again.Facts["pid"], err)
	}
}

// The refusal mapping across the pipe: the child sends a step's error
// with its class, and the parent's step turns a refusal into one that
// changed nothing, and only a refusal; an error leaves the child serving.
func TestRefusalsCrossTheChild(t *testing.T) {
	a := newAccountHost(t)
	ctx := context.Background()
	for _, tc := range []struct {
		state        workflow.State
		class        string
		refused      bool
		unregistered bool
	}{
		{"refuse", privsep.ClassRefused, true, false},
		{"unregistered", privsep.ClassUnregistered, false, true},
		{"transfer", privsep.ClassTransfer, false, false},
		{"fail", privsep.ClassInternal, false, false},
	} {
		t.Run(string(tc.state), func(t *testing.T) {
			_, callErr := a.step(tc.state).Call(ctx, nil, false)
			var ce *privsep.ChildError
			if !errors.As(callErr, &ce) || ce.Class() != tc.class || ce.Role != Role {
				t.Fatalf("the child's failure %#v, want a %s ChildError of %s", callErr, tc.class, Role)
			}
			if Refused(callErr) != tc.refused || Unregistered(callErr) != tc.unregistered {
				t.Errorf("Refused %v, Unregistered %v", Refused(callErr), Unregistered(callErr))
			}
			_, err := a.step(tc.state).Run(ctx, nil)
			var r *workflow.Refusal
			if got := workflow.IsUnchanged(err) && errors.As(err, &r); got != tc.refused {
				t.Errorf("the step's error %#v: a refusal that changed nothing: %v, want %v", err, got, tc.refused)
			}
			if !errors.As(err, &ce) {
				t.Errorf("the step's error %#v does not hold the child's", err)
			}
			if tc.state == "refuse" && !strings.Contains(ce.Message, "the node root is not the installer's. Inspect it") {
				t.Errorf("the refusal reads %q", ce.Message)
			}
		})
	}
	if _, err := a.step("one").Run(ctx, nil); err != nil {
		t.Errorf("after the failures: %v", err)
	}
}

// A step with IfNoAccount answers its event without a child when the
// account does not exist, and asks the child once it does.
func TestStepWithoutTheAccount(t *testing.T) {
	h := fakehost.New(t, "oac-asaccount-")
	calls := 0
	run := func(context.Context, Request) (Answer, error) { calls++; return Answer{Event: "ran"}, nil }
	s := Step{Workflow: "t", State: "one", D: testData{run: run}, IfNoAccount: "nothing_to_do", Accounts: h.DBs}
	res, err := s.Run(context.Background(), nil)
	if err != nil || res.Event != "nothing_to_do" || calls != 0 {
		t.Fatalf("without the account: %+v %v, %d calls", res, err, calls)
	}
	if err := h.Accounts.CreateServiceAccount(context.Background(), "/usr/sbin/nologin"); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Run(context.Background(), nil); err != nil || res.Event != "ran" || calls != 1 {
		t.Fatalf("with the account: %+v %v, %d calls", res, err, calls)
	}
	broken := s
	broken.Accounts = accounts.Databases{Passwd: h.Base + "/missing/passwd", Group: h.Base + "/missing/group"}
	if _, err := broken.Run(context.Background(), nil); err == nil || calls != 1 {
		t.Errorf("an unreadable account database: %v, %d calls", err, calls)
	}
}

// A verification's answer must be an outcome the engine knows.
func TestVerifyRefusesAnUnknownOutcome(t *testing.T) {
	run := func(context.Context, Request) (Answer, error) { return Answer{Outcome: 42}, nil }
	out, _, err := Step{Workflow: "t", State: "one", D: testData{run: run}}.Verify(context.Background(), nil)
	if err == nil || out != workflow.Unknown {
		t.Errorf("outcome 42: %v %v", out, err)
	}
}
