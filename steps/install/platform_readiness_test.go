package install

// The readiness wait's behaviours the platform's own installer tests
// (deploy/node/test_node_readiness.py), each as a test of ours (items
// 7b-7e and 7l of issue 26): the step runs in this process against a Core
// that answers the identity route as each test says.

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// readyCore is a Core whose identity route answers with answer(n, r), n
// counting the requests from 1; it records whether each request carried
// the node's credential.
type readyCore struct {
	srv        *httptest.Server
	mu         sync.Mutex
	requests   int
	credential int
}

func newReadyCore(t *testing.T, answer func(n int, w http.ResponseWriter, r *http.Request)) *readyCore {
	c := &readyCore{}
	c.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.requests++
		n := c.requests
		if strings.Contains(r.Header.Get("Authorization"), generationtest.Credential) {
			c.credential++
		}
		c.mu.Unlock()
		if r.URL.Path != "/api/v1/sandbox-node/identity" {
			http.NotFound(w, r)
			return
		}
		answer(n, w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *readyCore) counts() (requests, credential int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.credential
}

// identityAnswer is Core's answer for the node identity.json names, with
// edit applied.
func identityAnswer(edit func(map[string]any)) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		m := map[string]any{"node_id": generationtest.NodeID, "installation_id": generationtest.InstallationID, "provider": "docker",
			"deployment_generation": 1, "specification_digest": strings.Repeat("b", 64), "connected": true, "provider_ready": true}
		if edit != nil {
			edit(m)
		}
		json.NewEncoder(w).Encode(m)
	}
}

// readyNode is a node root whose identity.json (0600, the test's uid)
// names coreURL, and the NodeEnv of a command for coreURL.
type readyNode struct {
	env      *NodeEnv
	identity string
}

func newReadyNode(t *testing.T, coreURL string, ca []byte, insecure bool, edit func(map[string]any)) *readyNode {
	t.Helper()
	f := newInstallFixture(t)
	if err := EnsureNodeRoot(f.home, nodeTestID, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	dir := f.root("state", "node")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(dir), 0o700)
	os.Chmod(dir, 0o700)
	nid := map[string]any{
		"identity": map[string]any{"specification_digest": strings.Repeat("b", 64), "deployment_generation": 1, "node_id": generationtest.NodeID,
			"installation_id": generationtest.InstallationID, "provider": "docker", "backend_fingerprint": strings.Repeat("f", 64),
			"max_active": 2, "max_retained": 4},
		"credential": generationtest.Credential, "core_url": coreURL, "owner_epoch": 1,
	}
	if insecure {
		nid["allow_insecure_origin"] = true
	}
	if edit != nil {
		edit(nid)
	}
	data, _ := json.MarshalIndent(nid, "", "  ")
	p := filepath.Join(dir, "identity.json")
	if err := os.WriteFile(p, append(data, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	o := f.options()
	o.CoreOrigin, o.CoreCA, o.AllowInsecureOrigin = coreURL, ca, insecure
	e, err := NewNodeEnv(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return &readyNode{env: e, identity: p}
}

func coreCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// fileState is a file's bytes, mode and inode.
func fileState(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%v %d %s", fi.Mode(), inode(t, p), data)
}

// 7b: a transient 5xx on the identity route keeps polling, and the node
// becomes ready with identity.json as it was.
func TestReadinessRecoversFromATransient5xxWithIdentityUnchanged(t *testing.T) {
	sleeps := recordSleeps(t)
	core := newReadyCore(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 2 {
			http.Error(w, "unavailable", []int{http.StatusServiceUnavailable, http.StatusBadGateway}[n-1])
			return
		}
		identityAnswer(nil)(n, w, r)
	})
	node := newReadyNode(t, core.srv.URL, coreCA(core.srv), false, nil)
	before := fileState(t, node.identity)
	res, err := waitReadyStep{node.env}.Run(context.Background(), nil)
	if err != nil {
		t.Fatalf("readiness after two transient answers: %v", err)
	}
	if res.Facts["node_id"] != generationtest.NodeID {
		t.Errorf("facts %v", res.Facts)
	}
	if n, _ := core.counts(); n != 3 || len(*sleeps) != 2 {
		t.Errorf("%d requests and sleeps %v, want 3 and two sleeps", n, *sleeps)
	}
	if after := fileState(t, node.identity); after != before {
		t.Error("identity.json changed")
	}
}

// 7c: identity.json that is not 0600 (or names another Core) is refused
// before its credential is sent anywhere.
func TestReadinessRefusesToSendTheCredentialOfAnIdentityNotPrivate(t *testing.T) {
	recordSleeps(t)
	for _, mode := range []os.FileMode{0o644, 0o640, 0o604, 0o700, 0o400} {
		t.Run(mode.String(), func(t *testing.T) {
			core := newReadyCore(t, identityAnswer(nil))
			node := newReadyNode(t, core.srv.URL, coreCA(core.srv), false, nil)
			if err := os.Chmod(node.identity, mode); err != nil {
				t.Fatal(err)
			}
			_, err := waitReadyStep{node.env}.Run(context.Background(), nil)
			if !errors.Is(err, noderoot.ErrIdentity) {
				t.Fatalf("readiness with identity.json %v: %v, want ErrIdentity", mode, err)
			}
			if strings.Contains(err.Error(), generationtest.Credential) {
				t.Errorf("the error holds the credential: %v", err)
			}
			if n, _ := core.counts(); n != 0 {
				t.Errorf("%d requests reached Core", n)
			}
		})
	}
	t.Run("identity.json names another Core", func(t *testing.T) {
		core := newReadyCore(t, identityAnswer(nil))
		other := newReadyCore(t, identityAnswer(nil))
		node := newReadyNode(t, core.srv.URL, coreCA(core.srv), false, func(m map[string]any) { m["core_url"] = other.srv.URL })
		_, err := waitReadyStep{node.env}.Run(context.Background(), nil)
		if !errors.Is(err, noderoot.ErrIdentity) || !strings.Contains(err.Error(), "names Core") {
			t.Fatalf("readiness: %v, want ErrIdentity naming the Core", err)
		}
		if n, _ := core.counts(); n != 0 {
			t.Errorf("%d requests reached the command's Core", n)
		}
		if n, _ := other.counts(); n != 0 {
			t.Errorf("%d requests reached the Core identity.json names", n)
		}
	})
}

// 7d: an answer that names another node (or another echo of the
// identity) fails at once; the credential is not sent again.
func TestReadinessRefusesAnAnswerNamingAnotherNode(t *testing.T) {
	sleeps := recordSleeps(t)
	for name, edit := range map[string]func(map[string]any){
		"another node id":      func(m map[string]any) { m["node_id"] = "0f0e0d0c-0b0a-4908-8706-050403020100" },
		"no node id":           func(m map[string]any) { delete(m, "node_id") },
		"another installation": func(m map[string]any) { m["installation_id"] = "0f0e0d0c-0b0a-4908-8706-050403020101" },
		"another generation":   func(m map[string]any) { m["deployment_generation"] = 2 },
	} {
		t.Run(name, func(t *testing.T) {
			*sleeps = nil
			core := newReadyCore(t, identityAnswer(edit))
			node := newReadyNode(t, core.srv.URL, coreCA(core.srv), false, nil)
			_, err := waitReadyStep{node.env}.Run(context.Background(), nil)
			if err == nil || !strings.Contains(err.Error(), "different node identity") {
				t.Fatalf("readiness: %v, want \"different node identity\"", err)
			}
			if n, _ := core.counts(); n != 1 || len(*sleeps) != 0 {
				t.Errorf("%d requests, sleeps %v: want one request and no retry", n, *sleeps)
			}
		})
	}
}

// 7e: past the deadline, the message names the provider's state and the
// journalctl command of the unit; identity.json is kept as it was.
func TestReadinessDeadlineNamesTheProviderStateAndJournalctl(t *testing.T) {
	recordSleeps(t)
	old := ReadyDeadline
	ReadyDeadline = 300 * time.Millisecond
	t.Cleanup(func() { ReadyDeadline = old })
	for _, tc := range []struct {
		name  string
		edit  func(map[string]any)
		state string
	}{
		{"connected, provider not ready", func(m map[string]any) { m["provider_ready"] = false }, "the node is connected but its provider is not ready"},
		{"not connected", func(m map[string]any) { m["connected"] = false }, "Core has not confirmed the connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core := newReadyCore(t, identityAnswer(tc.edit))
			node := newReadyNode(t, core.srv.URL, coreCA(core.srv), false, nil)
			before := fileState(t, node.identity)
			_, err := waitReadyStep{node.env}.Run(context.Background(), nil)
			if !errors.Is(err, ErrNodeNotReady) {
				t.Fatalf("readiness: %v, want ErrNodeNotReady", err)
			}
			unit := layout.UnitName(generationtest.InstallationID)
			for _, want := range []string{tc.state, "sudo journalctl -u " + unit, "the service and its state are kept"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the message lacks %q: %v", want, err)
				}
			}
			if n, _ := core.counts(); n < 2 {
				t.Errorf("%d requests before the deadline", n)
			}
			if fileState(t, node.identity) != before {
				t.Error("identity.json changed")
			}
		})
	}
}

// 7l (the readiness wait's part): a recorded plain-http Core address that
// is not loopback is accepted only where identity.json records the
// insecure-origin policy and the command passes the flag; without them it
// is refused before any request.
func TestReadinessAcceptsARecordedHTTPAddressOnlyUnderTheInsecurePolicy(t *testing.T) {
	recordSleeps(t)
	old := ReadyDeadline
	ReadyDeadline = 200 * time.Millisecond
	t.Cleanup(func() { ReadyDeadline = old })
	const remote = "http://core.invalid"
	t.Run("without the policy", func(t *testing.T) {
		node := newReadyNode(t, remote, nil, false, nil)
		_, err := waitReadyStep{node.env}.Run(context.Background(), nil)
		if !errors.Is(err, noderoot.ErrIdentity) || !errors.Is(err, provider.ErrInsecureOrigin) {
			t.Fatalf("readiness: %v, want ErrIdentity and ErrInsecureOrigin", err)
		}
	})
	t.Run("recorded but not passed", func(t *testing.T) {
		node := newReadyNode(t, remote, nil, true, nil)
		node.env.in.AllowInsecureOrigin = false
		_, err := waitReadyStep{node.env}.Run(context.Background(), nil)
		if !errors.Is(err, noderoot.ErrIdentity) || !strings.Contains(err.Error(), "insecure-origin policy") {
			t.Fatalf("readiness: %v, want the policy's difference", err)
		}
	})
	t.Run("recorded and passed", func(t *testing.T) {
		node := newReadyNode(t, remote, nil, true, nil)
		// Accepted: the wait polls (the name does not resolve) until its
		// deadline, instead of refusing the identity.
		_, err := waitReadyStep{node.env}.Run(context.Background(), nil)
		if !errors.Is(err, ErrNodeNotReady) || errors.Is(err, noderoot.ErrIdentity) {
			t.Fatalf("readiness: %v, want ErrNodeNotReady (the address accepted)", err)
		}
	})
}

// The deadline message keeps the last complete poll's reason: a poll the
// deadline cut short (its request timed out with the wait) does not
// replace the provider's state with a timeout.
func TestReadyDeadlineKeepsTheLastCompletePollsReason(t *testing.T) {
	recordSleeps(t)
	polls := 0
	ready, last, err := pollUntil(context.Background(), time.Now().Add(200*time.Millisecond), func(ctx context.Context) (bool, string, error) {
		polls++
		if polls == 1 {
			return false, "the node is connected but its provider is not ready", nil
		}
		<-ctx.Done()
		return false, "Core has not confirmed the connection (" + ctx.Err().Error() + ")", nil
	})
	if err != nil || ready || last != "the node is connected but its provider is not ready" || polls != 2 {
		t.Fatalf("ready %v, last %q, err %v after %d polls", ready, last, err, polls)
	}
}
