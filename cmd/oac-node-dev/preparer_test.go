package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
)

// fakePreparer records each call with its process group, and fails one
// preparation with exit 65 while the file fail65 exists.
const fakePreparer = `#!/bin/sh
d=$(dirname "$0")
read -r _ _ _ _ pgid _ < /proc/$$/stat
printf '%s pgid=%s pid=%s\n' "$*" "$pgid" "$$" >> "$d/calls"
case "$*" in *"--generation-action prepare"*)
  if [ -e "$d/fail65" ]; then rm "$d/fail65"; echo 'artifact transfer failed' >&2; exit 65; fi;;
esac
exit 0
`

func TestRunPreparesAndCollectsGenerations(t *testing.T) {
	e := newEnv(t)
	if code, _, stderr := e.register(t, e.tokenFile(t)); code != 0 {
		t.Fatal(stderr)
	}
	id := e.identity(t)
	if err := os.WriteFile(filepath.Join(e.root, PreparerName), []byte(fakePreparer), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.root, "fail65"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	n := e.run(t)
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Online })

	var g2 devcore.GenerationView
	if st := e.admin(t, "POST", "/core/v1/sandbox/deployment/generations", &g2); st != 201 {
		t.Fatalf("publish: HTTP %d", st)
	}
	// The first preparation fails with 65: runtime_download_failed; the
	// retry succeeds and the node serves generation 2.
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Rollout.Diagnostic == diagRuntimeDownloadFailed })
	e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool { return v.Rollout.ServingGeneration == 2 })

	if st := e.admin(t, "POST", "/core/v1/sandbox/deployment/generations/1/drop", nil); st != 200 {
		t.Fatalf("drop: HTTP %d", st)
	}
	v := e.waitNode(t, id.Identity.NodeID, func(v devcore.NodeView) bool {
		for _, o := range v.Rollout.Generations {
			if o.Generation == 1 {
				return false
			}
		}
		return true
	})
	if len(v.Rollout.Generations) != 1 || v.Rollout.Generations[0] != (nodeproto.Observation{Generation: 2, SpecificationDigest: g2.SpecificationDigest, State: nodeproto.StateReady}) {
		t.Fatalf("observations %+v", v.Rollout.Generations)
	}

	data, err := os.ReadFile(filepath.Join(e.root, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	calls := strings.Split(strings.TrimSpace(string(data)), "\n")
	prefix := "--installation-id " + id.Identity.InstallationID + " --generation-action "
	want := []string{
		prefix + "prepare --generation 2 --specification-digest " + g2.SpecificationDigest,
		prefix + "prepare --generation 2 --specification-digest " + g2.SpecificationDigest,
		prefix + "collect --generation 1 --specification-digest " + id.Identity.SpecificationDigest,
	}
	if len(calls) != len(want) {
		t.Fatalf("calls:\n%s", data)
	}
	group := regexp.MustCompile(` pgid=(\d+) pid=(\d+)$`)
	for i, c := range calls {
		m := group.FindStringSubmatch(c)
		if m == nil || m[1] != m[2] {
			t.Errorf("call %q did not run in its own process group", c)
		}
		if got := group.ReplaceAllString(c, ""); got != want[i] {
			t.Errorf("call %d: %q, want %q", i, got, want[i])
		}
	}
	if !strings.Contains(n.log.String(), "artifact transfer failed") {
		t.Errorf("the helper's stderr did not reach the node's: %q", n.log.String())
	}
}
