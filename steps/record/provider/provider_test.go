package provider

import (
	"encoding/json"
	"errors"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/release"
)

const (
	testID     = "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a"
	testCommit = "0123456789abcdef0123456789abcdef01234567"
	otherSrc   = "89abcdef0123456789abcdef0123456789abcdef"
	testRoot   = "/var/lib/oac-node/.oac/nodes/" + testID
	testHome   = "/var/lib/oac-node"
)

func hex64(c byte) string { return strings.Repeat(string(c), 64) }

func testSpec(t *testing.T, provider, src string) *release.Specification {
	t.Helper()
	res := `{"cpus":2,"memory_mib":1024}`
	if provider == release.ProviderMicrosandbox {
		res = `{"cpus":2,"memory_mib":1024,"root_disk_mib":2048}`
	}
	raw := `{"resources":` + res + `,"runtime":{"source_commit":"` + src + `","image_id":"sha256:` + hex64('a') +
		`","image_manifest_digest":"sha256:` + hex64('b') + `","microsandbox_ref":"oac-runtime@sha256:` + hex64('b') +
		`","runtime_sha256":"` + hex64('c') + `","firmware_sha256":"` + hex64('d') + `"}}`
	s, err := release.ParseSpecification(provider, json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func dockerBase(t *testing.T) *Config {
	return &Config{
		InstallationID: testID, Provider: release.ProviderDocker, CoreURL: "https://core.example" + APIPath, Generation: 1,
		Specification: testSpec(t, release.ProviderDocker, testCommit),
		Docker: &DockerConfig{Host: DockerHost, Image: "sha256:" + hex64('a'), Network: NetworkName(testID),
			SeccompFile: testRoot + "/runtime/seccomp.json", NestedSandbox: true},
	}
}

func microBase(t *testing.T) *Config {
	store, err := StorePath("/home/n", testID)
	if err != nil {
		t.Fatal(err)
	}
	s := testSpec(t, release.ProviderMicrosandbox, testCommit)
	return &Config{
		InstallationID: testID, Provider: release.ProviderMicrosandbox, CoreURL: "https://core.example" + APIPath, Generation: 1,
		Specification: s,
		Microsandbox: &MicrosandboxConfig{
			HelperPath: "/home/n/root/native/bin/oac-microsandbox-provider", RuntimePath: "/home/n/root/native/microsandbox/msb",
			FirmwarePath: "/home/n/root/native/microsandbox/libkrunfw.so.5.6.1", RuntimeSHA256: hex64('c'), FirmwareSHA256: hex64('d'),
			RuntimeHome: store, Image: s.Runtime.MicrosandboxRef, CPUs: 2, MemoryMiB: 1024, RootDiskMiB: 2048,
			Network: MicrosandboxNetwork([]netip.AddrPort{netip.MustParseAddrPort("192.0.2.10:443")}),
		},
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	for _, c := range []*Config{dockerBase(t), microBase(t)} {
		t.Run(c.Provider, func(t *testing.T) {
			data, err := c.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(string(data), "}\n") || !strings.Contains(string(data), "\n  \"core_url\"") {
				t.Fatalf("not 2-space indented with a trailing newline:\n%s", data)
			}
			if strings.Index(string(data), `"core_url"`) > strings.Index(string(data), `"generation"`) {
				t.Fatalf("keys not sorted:\n%s", data)
			}
			back, err := Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			again, err := back.Marshal()
			if err != nil || string(again) != string(data) {
				t.Fatalf("round trip differs: %v\n%s\n%s", err, data, again)
			}
			if !Equal(c, back) {
				t.Fatal("Equal is false after a round trip")
			}
		})
	}
}

// mutate parses the marshalled config as a generic document, applies f and
// re-encodes it.
func mutate(t *testing.T, c *Config, f func(doc map[string]any)) []byte {
	t.Helper()
	data, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	f(doc)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestParseRefuses(t *testing.T) {
	obj := func(doc map[string]any, k string) map[string]any { return doc[k].(map[string]any) }
	cases := []struct {
		name string
		base func(*testing.T) *Config
		f    func(doc map[string]any)
	}{
		{"unknown key", dockerBase, func(d map[string]any) { d["max_active"] = 1 }},
		{"idle_seconds", microBase, func(d map[string]any) { obj(d, "microsandbox")["idle_seconds"] = 5 }},
		{"missing key", dockerBase, func(d map[string]any) { delete(d, "generation") }},
		{"bool generation", dockerBase, func(d map[string]any) { d["generation"] = true }},
		{"float generation", dockerBase, func(d map[string]any) { d["generation"] = json.Number("1.0") }},
		{"string generation", dockerBase, func(d map[string]any) { d["generation"] = "1" }},
		{"zero generation", dockerBase, func(d map[string]any) { d["generation"] = 0 }},
		{"null", dockerBase, func(d map[string]any) { d["core_url"] = nil }},
		{"core_url without api", dockerBase, func(d map[string]any) { d["core_url"] = "https://core.example" }},
		{"core_url with credentials", dockerBase, func(d map[string]any) { d["core_url"] = "https://u:p@core.example/api/v1" }},
		{"uppercase uuid", dockerBase, func(d map[string]any) { d["installation_id"] = strings.ToUpper(testID) }},
		{"wrong adapter", dockerBase, func(d map[string]any) { d["microsandbox"] = d["docker"]; delete(d, "docker") }},
		{"both adapters", dockerBase, func(d map[string]any) { d["microsandbox"] = map[string]any{} }},
		{"native adapter name", dockerBase, func(d map[string]any) { d["native"] = d["docker"]; delete(d, "docker") }},
		{"docker image tag", dockerBase, func(d map[string]any) { obj(d, "docker")["image"] = "oac-runtime:latest" }},
		{"docker network", dockerBase, func(d map[string]any) { obj(d, "docker")["network"] = "bridge" }},
		{"docker host tcp", dockerBase, func(d map[string]any) { obj(d, "docker")["host"] = "tcp://127.0.0.1:2375" }},
		{"relative seccomp", dockerBase, func(d map[string]any) { obj(d, "docker")["seccomp_file"] = "runtime/seccomp.json" }},
		{"unclean seccomp", dockerBase, func(d map[string]any) { obj(d, "docker")["seccomp_file"] = "/a/../b/seccomp.json" }},
		{"nested_sandbox string", dockerBase, func(d map[string]any) { obj(d, "docker")["nested_sandbox"] = "true" }},
		{"micro cpus differ", microBase, func(d map[string]any) { obj(d, "microsandbox")["cpus"] = 3 }},
		{"micro image differs", microBase, func(d map[string]any) {
			obj(d, "microsandbox")["image"] = "oac-runtime@sha256:" + hex64('e')
		}},
		{"micro hash differs", microBase, func(d map[string]any) { obj(d, "microsandbox")["runtime_sha256"] = hex64('e') }},
		{"micro egress allow", microBase, func(d map[string]any) { obj(obj(d, "microsandbox"), "network")["default_egress"] = "allow" }},
		{"micro rule port", microBase, func(d map[string]any) {
			r := obj(obj(d, "microsandbox"), "network")["rules"].([]any)
			r[0].(map[string]any)["port"] = "70000"
		}},
		{"micro rule unknown key", microBase, func(d map[string]any) {
			r := obj(obj(d, "microsandbox"), "network")["rules"].([]any)
			r[0].(map[string]any)["comment"] = "x"
		}},
		{"spec unknown key", dockerBase, func(d map[string]any) { obj(d, "specification")["extra"] = 1 }},
		{"docker disks", dockerBase, func(d map[string]any) { obj(obj(d, "specification"), "resources")["root_disk_mib"] = 2048 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(mutate(t, tc.base(t), tc.f))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse: %v, want ErrMalformed", err)
			}
		})
	}
	t.Run("duplicate key", func(t *testing.T) {
		data, _ := dockerBase(t).Marshal()
		dup := strings.Replace(string(data), `"generation": 1,`, `"generation": 1, "generation": 1,`, 1)
		if _, err := Parse([]byte(dup)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Parse: %v", err)
		}
	})
	t.Run("trailing data", func(t *testing.T) {
		data, _ := dockerBase(t).Marshal()
		if _, err := Parse(append(data, '{', '}')); !errors.Is(err, ErrMalformed) {
			t.Fatalf("Parse: %v", err)
		}
	})
}

func TestPlan(t *testing.T) {
	t.Run("docker same release uses the root", func(t *testing.T) {
		base := dockerBase(t)
		p, err := Plan(base, testSpec(t, release.ProviderDocker, testCommit), 2, testRoot, testHome)
		if err != nil {
			t.Fatal(err)
		}
		if p.Docker.SeccompFile != base.Docker.SeccompFile || p.Generation != 2 || p.Docker.Image != "sha256:"+hex64('a') {
			t.Fatalf("plan %+v", p.Docker)
		}
	})
	t.Run("docker other release", func(t *testing.T) {
		p, err := Plan(dockerBase(t), testSpec(t, release.ProviderDocker, otherSrc), 3, testRoot, testHome)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(testRoot, "releases", otherSrc, "runtime/seccomp.json"); p.Docker.SeccompFile != want {
			t.Fatalf("seccomp %s, want %s", p.Docker.SeccompFile, want)
		}
		dir, _ := p.ReleaseDir()
		if dir != filepath.Join(testRoot, "releases", otherSrc) {
			t.Fatalf("release dir %s", dir)
		}
	})
	t.Run("microsandbox other runtime gets its own store", func(t *testing.T) {
		base := microBase(t)
		base.Microsandbox.HelperPath = testRoot + "/native/bin/oac-microsandbox-provider"
		base.Microsandbox.RuntimePath = testRoot + "/native/microsandbox/msb"
		base.Microsandbox.FirmwarePath = testRoot + "/native/microsandbox/libkrunfw.so.5.6.1"
		spec := testSpec(t, release.ProviderMicrosandbox, otherSrc)
		spec.Runtime.RuntimeSHA256 = hex64('e')
		p, err := Plan(base, spec, 2, testRoot, "/home/n")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := GenerationStorePath("/home/n", testID, hex64('e'), hex64('d'))
		if p.Microsandbox.RuntimeHome != want || want == base.Microsandbox.RuntimeHome {
			t.Fatalf("store %s, want %s", p.Microsandbox.RuntimeHome, want)
		}
		spec2 := testSpec(t, release.ProviderMicrosandbox, otherSrc)
		p2, err := Plan(base, spec2, 3, testRoot, "/home/n")
		if err != nil || p2.Microsandbox.RuntimeHome != base.Microsandbox.RuntimeHome {
			t.Fatalf("same runtime: store %v, %v", p2, err)
		}
	})
}

func TestCheckPlanRefuses(t *testing.T) {
	base := dockerBase(t)
	good, err := Plan(base, testSpec(t, release.ProviderDocker, otherSrc), 2, testRoot, testHome)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		f    func(p *Config)
	}{
		{"other installation", func(p *Config) {
			p.InstallationID = "11111111-2222-4333-8444-555555555555"
			p.Docker.Network = NetworkName(p.InstallationID)
		}},
		{"other core", func(p *Config) { p.CoreURL = "https://other.example/api/v1" }},
		{"outside root", func(p *Config) { p.Docker.SeccompFile = "/etc/runtime/seccomp.json" }},
		{"another release", func(p *Config) {
			p.Docker.SeccompFile = filepath.Join(testRoot, "releases", testCommit, "runtime/seccomp.json")
		}},
		{"not the catalog path", func(p *Config) { p.Docker.SeccompFile = filepath.Join(testRoot, "seccomp.json") }},
		{"foreign image", func(p *Config) { p.Docker.Image = "sha256:" + hex64('f') }},
		{"other host", func(p *Config) { p.Docker.Host = "unix:///run/other.sock" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := good.Clone()
			tc.f(p)
			if err := CheckPlan(p, base, testRoot, testHome); !errors.Is(err, ErrPlanMismatch) {
				t.Fatalf("CheckPlan: %v, want ErrPlanMismatch", err)
			}
		})
	}
	t.Run("manifest digest is a valid plan image", func(t *testing.T) {
		p := good.Clone()
		p.Docker.Image = "sha256:" + hex64('b')
		if err := CheckPlan(p, base, testRoot, testHome); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCheckFinal(t *testing.T) {
	plan, err := Plan(dockerBase(t), testSpec(t, release.ProviderDocker, otherSrc), 2, testRoot, testHome)
	if err != nil {
		t.Fatal(err)
	}
	final := plan.Clone()
	final.Docker.Image = "sha256:" + hex64('b')
	if err := CheckFinal(final, plan); err != nil {
		t.Fatalf("resolved manifest identity: %v", err)
	}
	for name, f := range map[string]func(c *Config){
		"foreign image":    func(c *Config) { c.Docker.Image = "sha256:" + hex64('f') },
		"other seccomp":    func(c *Config) { c.Docker.SeccompFile = "/elsewhere/runtime/seccomp.json" },
		"other nested":     func(c *Config) { c.Docker.NestedSandbox = false },
		"other generation": func(c *Config) { c.Generation = 9 },
	} {
		t.Run(name, func(t *testing.T) {
			c := plan.Clone()
			f(c)
			if err := CheckFinal(c, plan); !errors.Is(err, ErrDrift) {
				t.Fatalf("CheckFinal: %v, want ErrDrift", err)
			}
		})
	}
}
