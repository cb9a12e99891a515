//go:build e2e

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coreapi "github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/nodeproto"
)

// An install rerun and the generation helper exclude each other through
// <node root>/install.lock (CONTRACT §3, §11), in both orders, and both end
// correctly:
//
//   - the helper first: while the node program's helper prepares a new
//     generation (its artifact download held by Core), a rerun refuses
//     with "Another node installation is running", nothing changed, and
//     status, which shows the running prepare, exits 0; once the download
//     goes on, the prepare completes and the same rerun completes;
//   - the install first: a rerun that runs steps, paused after its checks
//     (install.lock held by its service-account child), makes the helper
//     for a generation Core publishes meanwhile refuse, and the node
//     program retries; once the rerun ended, the node prepares and serves
//     that generation.
func TestEndToEndInterleaveInstallAndHelper(t *testing.T) {
	r := newCrashRig(t)
	h := &interleaveHost{crashHost: r.boot(t)}
	if res := h.install(t); res.status != 0 {
		t.Fatalf("install: %s", res)
	}
	id := r.core.installationID
	node := func(t *testing.T) coreapi.NodeView {
		var nodes struct {
			Nodes []coreapi.NodeView `json:"nodes"`
		}
		json.Unmarshal([]byte(r.core.admin(t, "nodes")), &nodes)
		if len(nodes.Nodes) != 1 {
			return coreapi.NodeView{}
		}
		return nodes.Nodes[0]
	}
	serving := func(t *testing.T) int64 { return node(t).Rollout.ServingGeneration }
	until := func(t *testing.T, what string, d time.Duration, cond func() bool, detail func() string) {
		t.Helper()
		for deadline := time.Now().Add(d); !cond(); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s did not happen within %s: %s", what, d, detail())
			}
		}
	}
	shell := func(t *testing.T, script string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, err := h.Command(ctx, "sh", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", script, err, out)
		}
		return string(out)
	}
	publish := func(t *testing.T) int64 {
		t.Helper()
		var g coreapi.GenerationView
		if err := json.Unmarshal([]byte(r.core.admin(t, "publish-generation")), &g); err != nil || g.Generation < 2 {
			t.Fatalf("publish-generation: %+v %v", g, err)
		}
		return g.Generation
	}

	t.Run("the helper first", func(t *testing.T) {
		r.core.admin(t, "pause-artifacts")
		g := publish(t)
		var hold coreapi.ArtifactHoldView
		until(t, "the helper's artifact download is held", 3*time.Minute, func() bool {
			json.Unmarshal([]byte(r.core.admin(t, "artifacts")), &hold)
			return hold.Held > 0
		}, func() string { return fmt.Sprintf("%+v", hold) })
		before := h.tree(t, h.nodeID(t))
		res := h.run(t, nil, "", r.installArgs()...)
		if res.status == 0 || !strings.Contains(res.out, "Another node installation is running") || !strings.Contains(res.out, "Nothing was changed.") {
			t.Fatalf("the rerun while the helper prepares generation %d: %s", g, res)
		}
		t.Logf("the rerun while the helper prepares generation %d: %s", g, res)
		if d := before.diff(h.tree(t, h.nodeID(t)), nil); len(d) > 0 {
			t.Errorf("the refused rerun changed the host:\n%s", strings.Join(d, "\n"))
		}
		if st := h.run(t, nil, "", "status"); st.status != 0 || !strings.Contains(st.out, "prepare") {
			t.Errorf("status while the helper prepares: %s", st)
		}
		r.core.admin(t, "resume-artifacts")
		until(t, fmt.Sprintf("Core serves generation %d", g), 4*time.Minute, func() bool { return serving(t) == g },
			func() string { return r.core.admin(t, "nodes") })
		if res := h.run(t, nil, "", r.installArgs()...); res.status != 0 {
			t.Fatalf("the rerun once the helper ended: %s", res)
		}
	})

	t.Run("the install first", func(t *testing.T) {
		// A record to write again makes the rerun run its steps.
		shell(t, "rm /var/lib/oac-node/.oac/nodes/"+id+"/runtime-artifacts.json")
		dir, err := os.MkdirTemp(r.tmp, "pause-")
		if err != nil {
			t.Fatal(err)
		}
		os.Chmod(dir, 0o755)
		// The decision points before the steps' check write nothing and
		// pass no failpoint: install-steps-checked is the fifth.
		first := h.start(t, "the rerun", []string{"OAC_PAUSE_AT=5", "OAC_PAUSE_DIR=" + dir}, "", r.installArgs()...)
		if at := waitPaused(t, first, dir); at != "install-steps-checked" {
			t.Fatalf("the rerun paused at %q, not after its checks", at)
		}
		g := publish(t)
		// The node program reports the helper's failure (the refusal for
		// install.lock) to Core and retries later.
		var seen coreapi.NodeView
		until(t, fmt.Sprintf("the node reports generation %d failed", g), 3*time.Minute, func() bool {
			seen = node(t)
			for _, o := range seen.Rollout.Generations {
				if o.Generation == g && o.State == nodeproto.StateFailed {
					return true
				}
			}
			return false
		}, func() string { return fmt.Sprintf("%+v", seen) })
		t.Logf("while the rerun holds install.lock, Core's view of the node: %+v", seen.Rollout)
		if s := serving(t); s == g {
			t.Fatalf("Core serves generation %d while the rerun holds install.lock", g)
		}
		if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if res := first.wait(t, 4*time.Minute); res.status != 0 {
			t.Fatalf("the paused rerun: %s", res)
		}
		shell(t, "test -f /var/lib/oac-node/.oac/nodes/"+id+"/runtime-artifacts.json")
		until(t, fmt.Sprintf("Core serves generation %d", g), 4*time.Minute, func() bool { return serving(t) == g },
			func() string { return r.core.admin(t, "nodes") })
		if res := h.run(t, nil, "", r.installArgs()...); res.status != 0 {
			t.Fatalf("a rerun after both: %s", res)
		}
	})
	h.secrets(t, "install and helper")
}
