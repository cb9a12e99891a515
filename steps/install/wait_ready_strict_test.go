package install

import (
	"context"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

func TestCoreIdentityAnswerIsStrict(t *testing.T) {
	const echo = `"node_id":"7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6","installation_id":"x","provider":"docker","deployment_generation":1,"specification_digest":"d"`
	for _, tc := range []struct {
		name, body string
		ok         bool
	}{
		{"ready", `{` + echo + `,"connected":true,"provider_ready":true,"max_active":1}`, true},
		{"flags absent", `{` + echo + `}`, true},
		{"case variant", `{` + echo + `,"connected":true,"Provider_Ready":false,"provider_ready":true}`, false},
		{"duplicate", `{` + echo + `,"connected":false,"connected":true,"provider_ready":true}`, false},
		{"string flag", `{` + echo + `,"connected":"true","provider_ready":true}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tc.body)) }))
			defer srv.Close()
			id := &noderoot.NodeIdentity{Credential: testCredential, CoreURL: srv.URL}
			pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
			a, status, err := CoreIdentity(context.Background(), testCoreClient(t, id, pool))
			if tc.ok != (err == nil) {
				t.Fatalf("identity = %+v, %d, %v; want ok %v", a, status, err, tc.ok)
			}
		})
	}
}

func testCoreClient(t *testing.T, id *noderoot.NodeIdentity, roots *x509.CertPool) *core.Client {
	t.Helper()
	c, err := noderoot.NewCoreClient(id, trust.Only(roots), proxy.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
