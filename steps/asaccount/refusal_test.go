package asaccount

import (
	"errors"
	"fmt"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/workflow"
)

// In the child, a step's error gets its class by type: the workflow's
// unregistered type outranks a refusal, which outranks its transfer type;
// anything else is internal.
func TestClassifyInTheChild(t *testing.T) {
	own := testServers["t"].Errors
	refusal := &workflow.Refusal{Err: errors.New("refused")}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"refusal", refusal, privsep.ClassRefused},
		{"wrapped refusal", fmt.Errorf("step: %w", refusal), privsep.ClassRefused},
		{"unregistered", errUnregistered, privsep.ClassUnregistered},
		{"unregistered refusal", &workflow.Refusal{Err: errUnregistered}, privsep.ClassUnregistered},
		{"transfer", fmt.Errorf("download: %w", errTransfer), privsep.ClassTransfer},
		{"transfer refusal", &workflow.Refusal{Err: errTransfer}, privsep.ClassRefused},
		{"other", errors.New("disk full"), privsep.ClassInternal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := classify(tc.err, own)
			if c := privsep.ClassOf(got); c != tc.want {
				t.Errorf("class %s, want %s", c, tc.want)
			}
			if !errors.Is(got, tc.err) || got.Error() != tc.err.Error() {
				t.Errorf("classify changed the error: %v", got)
			}
		})
	}
	if classify(nil, own) != nil {
		t.Error("no error got a class")
	}
	if c := privsep.ClassOf(classify(errTransfer, Errors{})); c != privsep.ClassInternal {
		t.Errorf("without the workflow's types, class %s", c)
	}
}

// In the parent, a refusal from a step run in process is the step's
// refusal that changed nothing; any other error stays as it is.
func TestStepErrInProcess(t *testing.T) {
	refusal := &workflow.Refusal{Err: errors.New("refused"), Hint: "Inspect it"}
	err := StepErr(fmt.Errorf("step: %w", refusal))
	var r *workflow.Refusal
	if !Refused(err) || !workflow.IsUnchanged(err) || !errors.As(err, &r) || r != refusal {
		t.Errorf("a refusal in process: %#v", err)
	}
	plain := errors.New("disk full")
	if err := StepErr(plain); err != plain || Refused(err) || Unregistered(err) {
		t.Errorf("another error: %#v", err)
	}
}
