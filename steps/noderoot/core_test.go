package noderoot

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/core"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

func configurationDoc(t *testing.T) map[string]any {
	t.Helper()
	spec := buildRelease(t, commitA).Spec(t, release.ProviderDocker, 2)
	raw, _ := spec.MarshalJSON()
	var s any
	json.Unmarshal(raw, &s)
	return map[string]any{"installation_id": testID, "provider": "docker", "core_url": "https://core.example", "generation": 3,
		"specification": s, "specification_digest": spec.Digest(), "max_active": 2, "max_retained": 4, "newer_field": true}
}

func TestParseConfiguration(t *testing.T) {
	good, _ := json.Marshal(configurationDoc(t))
	c, err := core.ParseConfiguration(good)
	if err != nil {
		t.Fatal(err)
	}
	if c.Generation != 3 || c.MaxRetained != 4 || c.Specification.Digest() != c.SpecificationDigest {
		t.Fatalf("%+v", c)
	}
	cases := map[string]func(d map[string]any){
		"bool generation":          func(d map[string]any) { d["generation"] = true },
		"float generation":         func(d map[string]any) { d["generation"] = 3.5 },
		"string generation":        func(d map[string]any) { d["generation"] = "3" },
		"zero max_active":          func(d map[string]any) { d["max_active"] = 0 },
		"max_active over retained": func(d map[string]any) { d["max_active"] = 5 },
		"max_retained over a 1e6":  func(d map[string]any) { d["max_retained"] = 1000001 },
		"digest of another spec":   func(d map[string]any) { d["specification_digest"] = strings.Repeat("0", 64) },
		"uppercase digest": func(d map[string]any) {
			d["specification_digest"] = strings.ToUpper(d["specification_digest"].(string))
		},
		"e2b provider":     func(d map[string]any) { d["provider"] = "e2b" },
		"spec unknown key": func(d map[string]any) { d["specification"].(map[string]any)["extra"] = 1 },
		"spec boolean cpus": func(d map[string]any) {
			d["specification"].(map[string]any)["resources"].(map[string]any)["cpus"] = true
		},
		"missing specification": func(d map[string]any) { delete(d, "specification") },
		"missing installation":  func(d map[string]any) { delete(d, "installation_id") },
		"numeric installation":  func(d map[string]any) { d["installation_id"] = 7 },
		// Values root compares and prints: a hostile Core's terminal
		// controls never get through, nor are they echoed.
		"installation with escapes":  func(d map[string]any) { d["installation_id"] = "\x1b]0;owned\a" + testID },
		"uppercase installation":     func(d map[string]any) { d["installation_id"] = strings.ToUpper(testID) },
		"installation not a UUID":    func(d map[string]any) { d["installation_id"] = "node-1" },
		"core_url with an escape":    func(d map[string]any) { d["core_url"] = "https://core.example\x1b[2J" },
		"core_url with a C1 control": func(d map[string]any) { d["core_url"] = "https://core\u009b.example" },
		"core_url with a path":       func(d map[string]any) { d["core_url"] = "https://core.example/evil" },
		"core_url with credentials":  func(d map[string]any) { d["core_url"] = "https://u:p@core.example" },
		"core_url not http":          func(d map[string]any) { d["core_url"] = "file:///etc/shadow" },
		"core_url empty":             func(d map[string]any) { d["core_url"] = "" },
		"core_url with a space":      func(d map[string]any) { d["core_url"] = "https://core.example next: curl evil" },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			d := configurationDoc(t)
			f(d)
			data, _ := json.Marshal(d)
			_, err := core.ParseConfiguration(data)
			if !errors.Is(err, core.ErrAnswer) {
				t.Fatalf("ParseConfiguration: %v, want ErrCoreAnswer", err)
			}
			if strings.ContainsAny(err.Error(), "\x1b\a\u009b") || strings.Contains(err.Error(), "evil") {
				t.Errorf("the refusal echoes Core's value: %q", err)
			}
		})
	}
	if _, err := core.ParseConfiguration([]byte(`[]`)); !errors.Is(err, core.ErrAnswer) {
		t.Errorf("array: %v", err)
	}
}

func TestCoreClient(t *testing.T) {
	id := &NodeIdentity{Credential: testCredential, CoreURL: ""}
	id.Identity.NodeID = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
	good, _ := json.Marshal(configurationDoc(t))
	const secretBody = "body-text-that-must-never-appear"
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    error
		code    int
	}{
		{"ok", func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+testCredential || r.Header.Get("X-OAC-Node-ID") != id.Identity.NodeID ||
				r.URL.Path != "/api/v1/sandbox-node/configuration" || r.URL.Query().Get("generation") != "3" || strings.Contains(r.URL.RawQuery, testCredential) {
				http.Error(w, secretBody, http.StatusBadRequest)
				return
			}
			w.Write(good)
		}, nil, 0},
		{"unauthorized", func(w http.ResponseWriter, r *http.Request) { http.Error(w, secretBody, http.StatusUnauthorized) }, core.ErrRejected, 401},
		{"wrong route", func(w http.ResponseWriter, r *http.Request) { http.Error(w, secretBody, http.StatusNotFound) }, core.ErrRejected, 404},
		{"resetting", func(w http.ResponseWriter, r *http.Request) { http.Error(w, secretBody, http.StatusConflict) }, core.ErrRejected, 409},
		{"redirect is not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.example/api/v1/sandbox-node/configuration", http.StatusFound)
		}, core.ErrRejected, 302},
		{"too large", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"pad":"` + strings.Repeat("x", core.MaxConfigurationSize) + `"}`))
		}, core.ErrAnswer, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewTLSServer(tc.handler)
			defer srv.Close()
			pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
			nid := *id
			nid.CoreURL = srv.URL
			_, err := testCoreClient(t, &nid, pool).Configuration(context.Background(), 3)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Configuration: %v, want %v", err, tc.want)
			}
			var se *core.StatusError
			if tc.code != 0 && (!errors.As(err, &se) || se.Code != tc.code) {
				t.Errorf("status %v, want %d", err, tc.code)
			}
			if msg := err.Error(); strings.Contains(msg, secretBody) || strings.Contains(msg, testCredential) {
				t.Errorf("the error echoes the body or the credential: %s", msg)
			}
		})
	}
	t.Run("untrusted certificate", func(t *testing.T) {
		srv := httptest.NewTLSServer(http.NotFoundHandler())
		defer srv.Close()
		nid := *id
		nid.CoreURL = srv.URL
		_, err := testCoreClient(t, &nid, nil).Configuration(context.Background(), 3)
		if err == nil || !strings.Contains(err.Error(), "not trusted") {
			t.Fatalf("Configuration: %v", err)
		}
	})
}

func TestParseNodeIdentity(t *testing.T) {
	doc := func() map[string]any {
		return map[string]any{
			"identity": map[string]any{"specification_digest": strings.Repeat("a", 64), "deployment_generation": 1, "node_id": "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6",
				"installation_id": testID, "provider": "docker", "backend_fingerprint": strings.Repeat("f", 64), "max_active": 1, "max_retained": 2},
			"credential": testCredential, "core_url": "https://core.example", "owner_epoch": 3,
		}
	}
	data, _ := json.Marshal(doc())
	id, err := ParseNodeIdentity(data)
	if err != nil || id.Identity.NodeID == "" || id.OwnerEpoch != 3 {
		t.Fatalf("%+v %v", id, err)
	}
	cases := map[string]func(d map[string]any){
		"unknown field":        func(d map[string]any) { d["token"] = "x" },
		"unknown inner field":  func(d map[string]any) { d["identity"].(map[string]any)["extra"] = 1 },
		"short credential":     func(d map[string]any) { d["credential"] = "abc" },
		"missing credential":   func(d map[string]any) { delete(d, "credential") },
		"core_url with a path": func(d map[string]any) { d["core_url"] = "https://core.example/api/v1" },
		"bad node id":          func(d map[string]any) { d["identity"].(map[string]any)["node_id"] = "node" },
		"string generation":    func(d map[string]any) { d["identity"].(map[string]any)["deployment_generation"] = "1" },
		"CA without checksum":  func(d map[string]any) { d["core_ca"] = "/x/core-ca.pem" },
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			d := doc()
			f(d)
			data, _ := json.Marshal(d)
			_, err := ParseNodeIdentity(data)
			if !errors.Is(err, ErrIdentity) {
				t.Fatalf("ParseNodeIdentity: %v", err)
			}
			if strings.Contains(err.Error(), testCredential) {
				t.Errorf("the error shows the credential: %v", err)
			}
		})
	}
}

func TestNodeRecords(t *testing.T) {
	if p, err := ParsePreparation([]byte(`{"source_url": "https://console.example"}`)); err != nil || p.SourceURL != "https://console.example" {
		t.Fatalf("%v %v", p, err)
	}
	for _, bad := range []string{`{}`, `{"source_url": "https://console.example/path"}`, `{"source_url": "x", "other": 1}`, `{"source_url": 5}`} {
		if _, err := ParsePreparation([]byte(bad)); !errors.Is(err, ErrRecord) {
			t.Errorf("preparation.json %s: %v", bad, err)
		}
	}
	ra := &RuntimeArtifacts{InstallationID: testID, SourceCommit: commitA, SHA256: map[string]string{release.PathSeccomp: strings.Repeat("1", 64), PathUnpacked: strings.Repeat("2", 64)}}
	data, err := ra.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseRuntimeArtifacts(data)
	if err != nil || back.SHA256[PathUnpacked] != ra.SHA256[PathUnpacked] {
		t.Fatalf("%+v %v", back, err)
	}
	for _, bad := range []*RuntimeArtifacts{
		{InstallationID: testID, SourceCommit: commitA, SHA256: map[string]string{release.PathNode: strings.Repeat("1", 64)}},
		{InstallationID: testID, SourceCommit: commitA, SHA256: map[string]string{release.PathSeccomp: "abc"}},
		{InstallationID: testID, SourceCommit: "main", SHA256: map[string]string{release.PathSeccomp: strings.Repeat("1", 64)}},
	} {
		if _, err := bad.Marshal(); !errors.Is(err, ErrRecord) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
