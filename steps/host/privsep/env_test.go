package privsep

import (
	"slices"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

func TestChildEnv(t *testing.T) {
	got := ChildEnv("/var/lib/oac-node", proxy.FromEnviron([]string{"NO_PROXY=x"}))
	want := []string{
		"HOME=/var/lib/oac-node", "USER=oac-node", "LOGNAME=oac-node",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "DOCKER_CONFIG=/run/oac-node-docker",
		"no_proxy=x", "NO_PROXY=x",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
