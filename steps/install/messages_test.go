package install

import (
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/workflow"
)

// The completion summary's Next says, in the platform's words (CONTRACT
// §6.3), to open Nodes in Web and that no model request was made; no line
// is wider than the platform's paragraph (88 columns).
func TestSummaryNextSaysNoModelRequestWasMade(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	out := f.out.String()
	want := "\nNext\n  Open Nodes in Web to manage this host: the node is listed there and takes sandboxes\n  now. No model request was made.\n"
	if !strings.Contains(out, want) {
		t.Errorf("the summary lacks %q:\n%s", want, out)
	}
	for _, l := range strings.Split(out[strings.Index(out, "\nNext\n"):], "\n") {
		if len(l) > 88 {
			t.Errorf("the Next line is wider than 88 columns: %q", l)
		}
	}
}

// A registered node's rerun that Core answers 409 (it no longer serves the
// node's generation) says that this does not pass and what to do, never
// that the node retries later.
func TestARetiredGenerationIsNotToBeWaitedFor(t *testing.T) {
	t.Parallel()
	f := newRunFixture(t)
	f.installed(t)
	f.token = ""
	f.setCoreReply(coreAnswers(409, nil))
	_, err := f.install(t, nil)
	if err == nil {
		t.Fatalf("no refusal\n%s", f.out.String())
	}
	msg := workflow.Message(err)
	for _, bad := range []string{"retries later", "try again later"} {
		if strings.Contains(msg, bad) {
			t.Errorf("the refusal says %q: %s", bad, msg)
		}
	}
	for _, want := range []string{"HTTP 409", "resetting", "waiting or rerunning does not change it", "--uninstall --installation-id", "Nothing was changed."} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not say %q: %s", want, msg)
		}
	}
}
