package asaccount

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/workflow"
)

// The test binary is its own service-account child: Children executes the
// captured test binary, whose TestMain serves Role with testServers.
func TestMain(m *testing.M) {
	privsep.ServeChild(os.Args[1:], map[string]privsep.Handler{Role: Serve(testServers)})
	os.Exit(m.Run())
}

// The test workflow's own error types with a class of their own.
var (
	errUnregistered = errors.New("Core's public URL changed")
	errTransfer     = errors.New("the artifact's checksum differs")
)

// testInput is the test workflow's Input.
type testInput struct {
	Secret string `json:"secret,omitempty"`
}

// testServers serve the test workflow "t": each step answers with the
// child's pid, or fails as its name says.
var testServers = map[string]Server{
	"t": {
		Serve: func(ctx context.Context, c *privsep.Child, req Request) (Answer, error) {
			var in testInput
			if err := req.DecodeInput(&in); err != nil {
				return Answer{}, err
			}
			c.Progress("step " + req.Step)
			switch req.Step {
			case "refuse":
				return Answer{}, fmt.Errorf("the step: %w", &workflow.Refusal{Err: errors.New("the node root is not the installer's"), Hint: "Inspect it"})
			case "unregistered":
				// Also a refusal: the unregistered class outranks it.
				return Answer{}, &workflow.Refusal{Err: errUnregistered}
			case "transfer":
				return Answer{}, errTransfer
			case "fail":
				return Answer{}, errors.New("the step failed")
			}
			out := Answer{Event: "ran", Facts: map[string]string{"pid": strconv.Itoa(os.Getpid()), "secret": in.Secret}}
			if req.Verify {
				out.Outcome = workflow.Done
			}
			return out, nil
		},
		Errors: Errors{
			Unregistered: func(err error) bool { return errors.Is(err, errUnregistered) },
			Transfer:     func(err error) bool { return errors.Is(err, errTransfer) },
		},
	},
}
