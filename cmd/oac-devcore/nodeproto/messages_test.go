package nodeproto

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// The platform's field lists (MiniMax-AI/OpenAgentCore and its fork
// sandbaseai/OpenAgentCore, services/core/internal/sandbox/node/
// generation_json.go validateGenerationJSON; types in wire.go), written
// out here by hand so that a change of ours shows against them.
var platform = map[string]struct{ required, optional string }{
	"hello":         {"version type identity health", "generation_management"},
	"welcome":       {"version type connection_id owner_epoch", "deployment"},
	"heartbeat":     {"version type health connection_id owner_epoch", ""},
	"heartbeat_ack": {"version type connection_id owner_epoch", "deployment"},
	"retention":     {"version type control", ""},
	"retention_ack": {"version type control deployment", ""},
	"identity":      {"specification_digest deployment_generation node_id installation_id provider backend_fingerprint max_active max_retained", ""},
	"health":        {"provider_ready observed_at active_operations cpu_utilization total_memory_bytes effective_cpu_cores", "generations diagnostic cpu_count available_memory_bytes available_disk_bytes"},
	"deployment":    {"generation specification_digest serving_generation", ""},
	"generation":    {"generation specification_digest state", "diagnostic"},
}

const (
	nodeID = "6b1f8c2e-4a57-4d43-9e0a-2f7a1c3d5e6f"
	instID = "0f0e0d0c-0b0a-4908-8706-050403020100"
	connID = "11111111-2222-4333-8444-555555555555"
)

var digest = strings.Repeat("ab", 32)

func keysOf(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// checkKeys: raw has every required field of the platform's list and
// nothing outside it; want names the optional ones it must carry.
func checkKeys(t *testing.T, name string, raw json.RawMessage, want ...string) map[string]json.RawMessage {
	t.Helper()
	l := platform[name]
	exp := append(strings.Fields(l.required), want...)
	slices.Sort(exp)
	if got := keysOf(t, raw); !slices.Equal(got, exp) {
		t.Errorf("%s fields %v, the platform's %v (optional %q)", name, got, exp, l.optional)
	}
	for _, w := range want {
		if !strings.Contains(" "+l.optional+" ", " "+w+" ") {
			t.Errorf("%s: %s is not among the platform's optional fields", name, w)
		}
	}
	var m map[string]json.RawMessage
	json.Unmarshal(raw, &m)
	return m
}

func i64(v int64) *int64     { return &v }
func f64(v float64) *float64 { return &v }
func encode(t *testing.T, f Frame) json.RawMessage {
	t.Helper()
	b, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sampleHealth(gens []Observation) *Health {
	return &Health{ProviderReady: true, ObservedAt: time.Date(2026, 12, 4, 15, 0, 0, 0, time.UTC), ActiveOperations: 0,
		CPUCount: i64(2), TotalMemoryBytes: i64(8 << 30), EffectiveCPUCores: f64(2), AvailableMemoryBytes: i64(4 << 30), Generations: gens}
}

func sampleIdentity() *Identity {
	return &Identity{SpecificationDigest: digest, DeploymentGeneration: 1, NodeID: nodeID, InstallationID: instID, Provider: "docker",
		BackendFingerprint: strings.Repeat("cd", 32), MaxActive: 2, MaxRetained: 4}
}

// TestFramesAgainstThePlatformsFieldLists encodes the frames both
// stand-ins send and compares their fields with the platform's lists.
func TestFramesAgainstThePlatformsFieldLists(t *testing.T) {
	gens := []Observation{{Generation: 1, SpecificationDigest: digest, State: StateReady}}
	hello := checkKeys(t, "hello", encode(t, Frame{Type: TypeHello, Identity: sampleIdentity(), Health: sampleHealth(gens), GenerationManagement: true}), "generation_management")
	if string(hello["version"]) != "5" {
		t.Errorf("hello version %s", hello["version"])
	}
	checkKeys(t, "identity", hello["identity"])
	h := checkKeys(t, "health", hello["health"], "generations", "cpu_count", "available_memory_bytes")
	var list []json.RawMessage
	json.Unmarshal(h["generations"], &list)
	checkKeys(t, "generation", list[0])

	// A node without generations: no generation_management, no
	// generations; the three metrics present as null when unknown.
	plain := checkKeys(t, "hello", encode(t, Frame{Type: TypeHello, Identity: sampleIdentity(), Health: &Health{ObservedAt: time.Now(), Diagnostic: "docker_unavailable"}}))
	ph := checkKeys(t, "health", plain["health"], "diagnostic")
	for _, k := range []string{"cpu_utilization", "total_memory_bytes", "effective_cpu_cores"} {
		if string(ph[k]) != "null" {
			t.Errorf("health %s = %s, want null", k, ph[k])
		}
	}

	serving := int64(1)
	d := &Deployment{Generation: 2, SpecificationDigest: digest, ServingGeneration: &serving}
	w := checkKeys(t, "welcome", encode(t, Frame{Type: TypeWelcome, ConnectionID: connID, OwnerEpoch: 3, Deployment: d}), "deployment")
	checkKeys(t, "deployment", w["deployment"])
	checkKeys(t, "welcome", encode(t, Frame{Type: TypeWelcome, ConnectionID: connID, OwnerEpoch: 3}))
	checkKeys(t, "heartbeat", encode(t, Frame{Type: TypeHeartbeat, ConnectionID: connID, OwnerEpoch: 3, Health: sampleHealth(gens)}))
	a := checkKeys(t, "heartbeat_ack", encode(t, Frame{Type: TypeHeartbeatAck, ConnectionID: connID, OwnerEpoch: 3, Deployment: &Deployment{Generation: 2, SpecificationDigest: digest}}), "deployment")
	if dd := checkKeys(t, "deployment", a["deployment"]); string(dd["serving_generation"]) != "null" {
		t.Errorf("serving_generation %s", dd["serving_generation"])
	}
	checkKeys(t, "heartbeat_ack", encode(t, Frame{Type: TypeHeartbeatAck, ConnectionID: connID, OwnerEpoch: 3}))
	ctl := &Control{ID: nodeID, Sequence: 1, ConnectionID: connID, OwnerEpoch: 3, References: []Reference{{1, digest}}}
	checkKeys(t, "retention", encode(t, Frame{Type: TypeRetention, Control: ctl}))
	ack := &Control{ID: nodeID, Sequence: 1, ConnectionID: connID, OwnerEpoch: 3, Retentions: []Retention{{1, digest, false}}}
	checkKeys(t, "retention_ack", encode(t, Frame{Type: TypeRetentionAck, Control: ack, Deployment: d}))
}

// TestDecodeIsStrict: what the platform's decoder refuses, ours does.
func TestDecodeIsStrict(t *testing.T) {
	id, _ := json.Marshal(sampleIdentity())
	hb := `{"provider_ready":true,"observed_at":"2026-12-04T15:00:00Z","active_operations":0,"cpu_utilization":null,"total_memory_bytes":null,"effective_cpu_cores":null}`
	ok := `{"version":5,"type":"hello","identity":` + string(id) + `,"health":` + hb + `}`
	if _, err := Decode([]byte(ok)); err != nil {
		t.Fatalf("the platform's hello: %v", err)
	}
	obs := func(n int) string {
		var s []string
		for i := 1; i <= n; i++ {
			s = append(s, `{"generation":`+string(rune('0'+i))+`,"specification_digest":"`+digest+`","state":"ready"}`)
		}
		return "[" + strings.Join(s, ",") + "]"
	}
	for name, msg := range map[string]string{
		"our former dialect":             strings.Replace(ok, `"version":5`, `"protocol_version":5`, 1),
		"version 4":                      strings.Replace(ok, `"version":5`, `"version":4`, 1),
		"no version":                     strings.Replace(ok, `"version":5,`, ``, 1),
		"unknown field":                  strings.Replace(ok, `"version":5`, `"version":5,"extra":1`, 1),
		"repeated field":                 strings.Replace(ok, `"version":5`, `"version":5,"version":5`, 1),
		"case-folded field":              strings.Replace(ok, `"type"`, `"Type"`, 1),
		"null identity":                  `{"version":5,"type":"hello","identity":null,"health":` + hb + `}`,
		"health without metrics":         strings.Replace(ok, `,"cpu_utilization":null,"total_memory_bytes":null,"effective_cpu_cores":null`, ``, 1),
		"identity without backend":       strings.Replace(ok, `"backend_fingerprint"`, `"fingerprint"`, 1),
		"generations without management": strings.Replace(ok, `"active_operations":0`, `"active_operations":0,"generations":`+obs(1), 1),
		"nine generations": strings.Replace(strings.Replace(ok, `"active_operations":0`, `"active_operations":0,"generations":`+obs(9), 1),
			`"type":"hello"`, `"type":"hello","generation_management":true`, 1),
		"utilization above 1":       strings.Replace(ok, `"cpu_utilization":null`, `"cpu_utilization":1.5`, 1),
		"data after the frame":      ok + ` {}`,
		"welcome without a uuid":    `{"version":5,"type":"welcome","connection_id":"x","owner_epoch":1}`,
		"welcome with epoch 0":      `{"version":5,"type":"welcome","connection_id":"` + connID + `","owner_epoch":0}`,
		"heartbeat without health":  `{"version":5,"type":"heartbeat","connection_id":"` + connID + `","owner_epoch":1}`,
		"the former deployment":     `{"version":5,"type":"deployment","deployment":{"generation":2,"specification_digest":"` + digest + `","serving_generation":1}}`,
		"the former drop":           `{"version":5,"type":"drop","generation":1,"specification_digest":"` + digest + `"}`,
		"ack without serving field": `{"version":5,"type":"heartbeat_ack","connection_id":"` + connID + `","owner_epoch":1,"deployment":{"generation":2,"specification_digest":"` + digest + `"}}`,
		"oversized control frame":   strings.Replace(ok, `"provider_ready":true`, `"provider_ready":true,"diagnostic":"`+strings.Repeat("a", MaxControlFrame)+`"`, 1),
	} {
		if f, err := Decode([]byte(msg)); !errors.Is(err, ErrMessage) {
			t.Errorf("%s: Decode = %+v, %v", name, f, err)
		}
	}
	// Encode refuses to send what Decode would refuse.
	if _, err := Encode(Frame{Type: TypeHeartbeat, Health: sampleHealth(nil)}); !errors.Is(err, ErrMessage) {
		t.Errorf("Encode of a heartbeat without its connection: %v", err)
	}
}
