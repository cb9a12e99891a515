package generation

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
	"github.com/openagentcore/oac-node-install/steps/testsupport/treetest"
)

// unchanged runs f and requires that it changed no file under the node's
// home except the lock and journal files a run may create.
func unchanged(t *testing.T, n *testNode, f func()) {
	t.Helper()
	strip := func(m map[string]string) map[string]string {
		for k := range m {
			if strings.HasSuffix(k, "install.lock") || strings.Contains(k, "journals") {
				delete(m, k)
			}
		}
		return m
	}
	before := strip(treetest.Snapshot(t, n.home, treetest.Options{}))
	f()
	if d := treetest.Diff(before, strip(treetest.Snapshot(t, n.home, treetest.Options{}))); d != "" {
		t.Errorf("the refusal changed files:\n%s", d)
	}
}

func TestPrepareRefusals(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification)
		want     error
		artifact bool // exit 65: an artifact transfer, checksum or provenance failure
		same     bool // nothing at all changed
	}{
		{
			name: "dropped generation",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				writeRecord(t, n.gen("2.dropped"), map[string]any{"installation_id": testID, "generation": 2, "specification_digest": spec.Digest()})
			},
			want: lease.ErrDropped, same: true,
		},
		{
			name: "collecting generation",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				writeRecord(t, n.gen("2.collecting"), map[string]any{"installation_id": testID, "generation": 2, "specification_digest": spec.Digest(), "native_complete": false})
			},
			want: noderoot.ErrCollecting, same: true,
		},
		{
			name: "Core holds another specification",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				n.srv.SetSpec(2, b.Spec(t, release.ProviderDocker, 7))
			},
			want: noderoot.ErrSpecification,
		},
		{
			name: "Core rejects the credential",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				n.srv.SetCoreReply(func(w http.ResponseWriter, g int64) bool { w.WriteHeader(http.StatusUnauthorized); return true })
			},
			want: core.ErrRejected,
		},
		{
			name: "Core answers for another installation",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				n.srv.SetCoreReply(func(w http.ResponseWriter, g int64) bool {
					raw, _ := spec.MarshalJSON()
					json.NewEncoder(w).Encode(map[string]any{"installation_id": "11111111-2222-4333-8444-555555555555", "provider": "docker",
						"core_url": n.srv.URL, "generation": g, "specification": json.RawMessage(raw), "specification_digest": spec.Digest(),
						"max_active": 1, "max_retained": 1})
					return true
				})
			},
			want: core.ErrAnswer,
		},
		{
			name: "plan drift",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				other, err := provider.Plan(n.baseCfg, spec, 2, n.node.Root, n.home)
				if err != nil {
					t.Fatal(err)
				}
				other.Docker.Image = spec.Runtime.ImageManifestDigest
				data, _ := other.Marshal()
				initLease(t, n, 2, spec)
				if err := lease.WritePreparing(n.node.Generations(), lease.Preparing{Identity: leaseID(2, spec), Configuration: data}, os.Getuid()); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrPlanDrift,
		},
		{
			name: "final configuration drift",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				other, _ := provider.Plan(n.baseCfg, spec, 2, n.node.Root, n.home)
				other.Docker.NestedSandbox = false
				data, _ := other.Marshal()
				initLease(t, n, 2, spec)
				if err := os.WriteFile(n.gen("2.json"), data, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: ErrPlanDrift,
		},
		{
			name: "release metadata does not verify",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				n.srv.Serve("/node-install/releases/"+commitB+"/manifest.json", func(w http.ResponseWriter, r *http.Request) {
					w.Write(append(append([]byte(nil), b.Files[release.ManifestName]...), ' '))
				})
			},
			want: release.ErrChecksumMismatch, artifact: true,
		},
		{
			name: "release missing on the console",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				n.srv.Serve("/node-install/releases/"+commitB+"/SHA256SUMS", http.NotFound)
			},
			want: download.ErrHTTPStatus, artifact: true,
		},
		{
			name: "artifact with other bytes",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				name := b.Manifest.Artifacts[release.PathRuntimeImage].Filename
				n.srv.Serve("/node-install/releases/"+commitB+"/artifacts/"+name, func(w http.ResponseWriter, r *http.Request) {
					data := append([]byte(nil), b.Bytes[release.PathRuntimeImage]...)
					data[len(data)/2] ^= 0xff
					w.Write(data)
				})
			},
			want: download.ErrChecksum, artifact: true,
		},
		{
			name: "seccomp profile with other bytes",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				n.srv.Serve("/node-install/releases/"+commitB+"/runtime/seccomp.json", func(w http.ResponseWriter, r *http.Request) {
					w.Write([]byte("{}\n"))
				})
			},
			want: release.ErrChecksumMismatch, artifact: true,
		},
		{
			name: "conflicting local file",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				dir := n.path("releases", commitB, "runtime")
				os.MkdirAll(dir, 0o700)
				os.Chmod(n.path("releases"), 0o700)
				os.Chmod(n.path("releases", commitB), 0o700)
				if err := os.WriteFile(filepath.Join(dir, "seccomp.json"), []byte("{}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: noderoot.ErrConflict,
		},
		{
			name: "installation lock busy",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				l, err := safefile.TryLock(n.node.InstallLock(), 0o600)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Unlock() })
			},
			want: noderoot.ErrInstallLocked, same: true,
		},
		{
			name: "helper holds the lease",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				initLease(t, n, 2, spec)
				l, err := safefile.TryLockShared(n.gen("2.lease"), 0o600)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Unlock() })
			},
			want: lease.ErrHelperActive, same: true,
		},
		{
			name: "lease without identity",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				if err := os.WriteFile(n.gen("2.lease"), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			want: lease.ErrIdentityMissing, same: true,
		},
		{
			name: "lease of another specification",
			setup: func(t *testing.T, n *testNode, b *fixtureRelease, spec *release.Specification) {
				initLease(t, n, 2, b.Spec(t, release.ProviderDocker, 9))
			},
			want: lease.ErrIdentityMismatch, same: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, _, b := dockerNode(t)
			spec := b.Spec(t, release.ProviderDocker, 2)
			n.srv.SetSpec(2, spec)
			tc.setup(t, n, b, spec)
			var err error
			check := func() { err = n.run(noderoot.ActionPrepare, 2, spec) }
			if tc.same {
				unchanged(t, n, check)
			} else {
				check()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("prepare: %v, want %v", err, tc.want)
			}
			if got := noderoot.IsArtifactFailure(err); got != tc.artifact {
				t.Errorf("IsArtifactFailure = %v for %v", got, err)
			}
			if _, err := os.Lstat(n.gen("2.json")); tc.name != "final configuration drift" && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a final configuration was published: %v", err)
			}
			if st, _ := n.docker.State(); st.Loads != 0 {
				t.Errorf("the refused preparation loaded an image")
			}
		})
	}
}

func leaseID(g int64, spec *release.Specification) lease.Identity {
	return lease.Identity{InstallationID: testID, Generation: g, SpecificationDigest: spec.Digest()}
}

func initLease(t *testing.T, n *testNode, g int64, spec *release.Specification) {
	t.Helper()
	l, err := lease.Initialize(n.node.Generations(), leaseID(g, spec), os.Getuid())
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
}

func writeRecord(t *testing.T, path string, v map[string]any) {
	t.Helper()
	data, _ := json.MarshalIndent(v, "", "  ")
	if err := os.WriteFile(path, append(data, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
}

var _ = context.Background
