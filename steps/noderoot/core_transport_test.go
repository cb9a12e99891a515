package noderoot

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/download/downloadtest"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// setIdentity rewrites fields of the node's identity.json.
func setIdentity(t *testing.T, n *testNode, change func(map[string]any)) {
	t.Helper()
	path := n.path("state/node/identity.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	change(doc)
	if data, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// specificationEnv is an Env for preparing generation 2 of a Docker node
// whose Core (the test server) answers spec for it.
func specificationEnv(t *testing.T) (*testNode, *Env) {
	t.Helper()
	n, _, other := dockerNode(t)
	spec := other.Spec(t, release.ProviderDocker, 2)
	n.srv.SetSpec(2, spec)
	e, err := NewEnv(n.options(ActionPrepare, 2, spec))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return n, e
}

// TestCoreOriginPolicy: an identity whose core_url is plain http to a host
// that is not loopback is refused before any request unless it records
// allow_insecure_origin.
func TestCoreOriginPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		coreURL  string
		insecure bool
		refused  bool
	}{
		{"http, not loopback", "http://core.example", false, true},
		{"http, not loopback, insecure origin allowed", "http://core.example", true, false},
		{"http, loopback", "http://127.0.0.1:9", false, false},
		{"http, localhost", "http://localhost:9", false, false},
		{"https", "https://core.example", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := &NodeIdentity{Credential: testCredential, CoreURL: tc.coreURL, AllowInsecureOrigin: tc.insecure}
			_, err := NewCoreClient(id, nil, proxy.Env{})
			if refused := errors.Is(err, provider.ErrInsecureOrigin); refused != tc.refused || (err != nil && !refused) {
				t.Errorf("NewCoreClient: %v, want refused %v", err, tc.refused)
			}
		})
	}
	t.Run("identity.json read by the helper", func(t *testing.T) {
		n, e := specificationEnv(t)
		setIdentity(t, n, func(d map[string]any) { d["core_url"] = "http://core.example" })
		_, err := e.Specification(context.Background())
		if !errors.Is(err, provider.ErrInsecureOrigin) || !errors.Is(err, ErrIdentity) {
			t.Fatalf("Specification: %v, want ErrIdentity and ErrInsecureOrigin", err)
		}
	})
	t.Run("preparation.json's console read by the helper", func(t *testing.T) {
		n, e := specificationEnv(t)
		if err := os.WriteFile(n.path("preparation.json"), []byte(`{"source_url": "http://console.example"}`+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := e.Release(context.Background(), commitA)
		if !errors.Is(err, provider.ErrInsecureOrigin) {
			t.Fatalf("Release: %v, want ErrInsecureOrigin", err)
		}
	})
}

// TestCoreClientProxy: the Core client reads the proxy variables the way
// downloads do: a set lowercase variable wins even when empty, the proxy
// serves loopback hosts too, and an unusable value is refused before any
// request.
func TestCoreClientProxy(t *testing.T) {
	for _, v := range proxy.Variables {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	p := &downloadtest.Proxy{}
	proxySrv := httptest.NewServer(p)
	defer proxySrv.Close()

	t.Run("empty lowercase beats uppercase", func(t *testing.T) {
		t.Setenv("https_proxy", "")
		t.Setenv("HTTPS_PROXY", proxySrv.URL)
		_, e := specificationEnv(t)
		before := len(seen(p))
		if _, err := e.Specification(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := seen(p)[before:]; len(got) != 0 {
			t.Errorf("the proxy saw %q; an empty https_proxy must override HTTPS_PROXY", got)
		}
	})
	t.Run("lowercase proxy carries Core's requests", func(t *testing.T) {
		t.Setenv("https_proxy", proxySrv.URL)
		t.Setenv("HTTPS_PROXY", "")
		n, e := specificationEnv(t)
		before := len(seen(p))
		if _, err := e.Specification(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := "CONNECT " + strings.TrimPrefix(n.srv.URL, "https://")
		if got := seen(p)[before:]; len(got) != 1 || got[0] != want {
			t.Errorf("the proxy saw %q, want [%s]", got, want)
		}
	})
	t.Run("bad value refused", func(t *testing.T) {
		const secret = "ftp://user:s3cret@proxy.example"
		t.Setenv("https_proxy", secret)
		_, e := specificationEnv(t)
		_, err := e.Specification(context.Background())
		if err == nil || !strings.Contains(err.Error(), "https_proxy") {
			t.Fatalf("Specification: %v, want a refusal naming https_proxy", err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("the refusal shows the proxy's value: %v", err)
		}
	})
}

// seen lists the requests the proxy was asked.
func seen(p *downloadtest.Proxy) []string {
	requests, _ := p.Seen()
	return requests
}

// testCoreClient is a Core client without a proxy.
func testCoreClient(t *testing.T, id *NodeIdentity, roots *x509.CertPool) *core.Client {
	t.Helper()
	c, err := NewCoreClient(id, trust.Only(roots), proxy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
