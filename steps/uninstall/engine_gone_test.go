package uninstall

import (
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/workflow"
)

// stopEngine leaves the node's Docker Engine stopped or removed: its
// socket answers nothing.
func (f *hostFixture) stopEngine(t *testing.T) {
	t.Helper()
	st := f.engine(t)
	st.Stopped = true
	must(t, fileEngineOf(f.host.Home()).Save(st))
}

// TestUninstallWithoutADockerEngine: with the Docker Engine stopped or
// removed, the uninstallation (Core confirming, or with --force) removes
// everything else, keeps the node's network, says so with the command that
// removes it once the engine runs, and ends incomplete instead of failing
// in its network step for every rerun.
func TestUninstallWithoutADockerEngine(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(map[bool]string{false: "Core confirmed", true: "--force"}[force], func(t *testing.T) {
			f := newHostFixture(t)
			f.install(t)
			f.status.Store(401) // Core no longer lists the node
			f.stopEngine(t)
			rep, err := f.uninstall(t, force)
			out := f.out.String()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			net := docker.NetworkName(id)
			if rep.Condition != workflow.Incomplete || rep.NetworkLeft() != net {
				t.Errorf("condition %s, network left %q; want %s, %q", rep.Condition, rep.NetworkLeft(), workflow.Incomplete, net)
			}
			if want := "sudo docker network rm " + net; !strings.Contains(out, want) {
				t.Errorf("the output lacks %q:\n%s", want, out)
			}
			if _, ok := f.engine(t).Nets[net]; !ok {
				t.Errorf("the network is gone from a stopped engine")
			}
			if force {
				return // the store Core did not confirm stays, with the account
			}
			if d := f.leftovers(t); d != "" {
				t.Errorf("the host differs from before the installation:\n%s\noutput:\n%s", d, out)
			}
			// The rerun is a no-op: what is left is the engine's, removed
			// by the command printed.
			f.out.Reset()
			rep, err = f.uninstall(t, false)
			if err != nil || rep.Run != workflow.RunConverged {
				t.Errorf("rerun: %v %v\n%s", rep, err, f.out.String())
			}
		})
	}
}
