package nodeproto

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// ProtocolVersion is the node protocol version every frame carries in
// "version" (CONTRACT §11; the platform's
// services/core/internal/sandbox/node/wire.go, ProtocolVersion 5). A frame
// of another version is refused.
const ProtocolVersion = 5

// Timing of the connection (CONTRACT §6.2; the platform's agent.go and
// hub.go): the hello within 15 s of the upgrade, a heartbeat every 10 s,
// each side reads with a 35 s deadline, and a node is online while its
// last heartbeat is younger than 45 s.
const (
	HelloTimeout      = 15 * time.Second
	HeartbeatInterval = 10 * time.Second
	ReadTimeout       = 35 * time.Second
	OnlineWindow      = 45 * time.Second
)

// MaxControlFrame bounds every frame but request and response (wire.go
// MaxControlFrameBytes).
const MaxControlFrame = 32 * 1024

// MaxObservations bounds the generation observations of one health, and
// the references or retentions of one control (generation_wire.go).
const MaxObservations = 8

// MaxActiveOperations is the largest active_operations (wire.go maxPending).
const MaxActiveOperations = 32

// MaxCapacity is the largest max_retained the node accepts
// (enrollment.go verifyEnrollment: 1 <= max_active <= max_retained <= 1000000).
const MaxCapacity = 1000000

// Frame types (generation_json.go validateGenerationJSON).
const (
	TypeHello        = "hello"         // node → Core
	TypeWelcome      = "welcome"       // Core → node
	TypeHeartbeat    = "heartbeat"     // node → Core
	TypeHeartbeatAck = "heartbeat_ack" // Core → node, one per heartbeat
	TypeRetention    = "retention"     // node → Core, generation-managing nodes
	TypeRetentionAck = "retention_ack" // Core → node
	TypeRequest      = "request"       // Core → node: work
	TypeResponse     = "response"      // node → Core
)

// Generation observation states.
const (
	StateReady     = "ready"
	StatePreparing = "preparing"
	StateFailed    = "failed"
)

// Identity is the node's identity as it enrolled (wire.go Identity). Core
// compares all but the capacity with the enrollment (hub.go sameBackend).
type Identity struct {
	SpecificationDigest  string `json:"specification_digest"`
	DeploymentGeneration int64  `json:"deployment_generation"`
	NodeID               string `json:"node_id"`
	InstallationID       string `json:"installation_id"`
	Provider             string `json:"provider"`
	BackendFingerprint   string `json:"backend_fingerprint"`
	MaxActive            int64  `json:"max_active"`
	MaxRetained          int64  `json:"max_retained"`
}

// Health is the node's provider readiness and host metrics (wire.go
// Health). Diagnostic is one of the codes of CONTRACT §6.1, empty when
// ready. CPUUtilization, TotalMemoryBytes and EffectiveCPUCores are always
// sent, null when unknown; the other metrics are left out when unknown.
// Generations is sent only by a generation-managing node.
type Health struct {
	Generations          []Observation `json:"generations,omitempty"`
	Diagnostic           string        `json:"diagnostic,omitempty"`
	ProviderReady        bool          `json:"provider_ready"`
	ObservedAt           time.Time     `json:"observed_at"`
	ActiveOperations     int           `json:"active_operations"`
	CPUCount             *int64        `json:"cpu_count,omitempty"`
	CPUUtilization       *float64      `json:"cpu_utilization"`
	TotalMemoryBytes     *int64        `json:"total_memory_bytes"`
	EffectiveCPUCores    *float64      `json:"effective_cpu_cores"`
	AvailableMemoryBytes *int64        `json:"available_memory_bytes,omitempty"`
	AvailableDiskBytes   *int64        `json:"available_disk_bytes,omitempty"`
}

// Deployment is Core's target for a generation-managing node; a null
// ServingGeneration says Core names none.
type Deployment struct {
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
	ServingGeneration   *int64 `json:"serving_generation"`
}

// Observation is the node's view of one generation.
type Observation struct {
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
	State               string `json:"state"`
	Diagnostic          string `json:"diagnostic,omitempty"`
}

// Reference names a generation the node retains.
type Reference struct {
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
}

// Retention is Core's answer for one reference: keep it, or the node may
// collect it.
type Retention struct {
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
	Keep                bool   `json:"keep"`
}

// Control is the correlated body of retention and retention_ack
// (generation_wire.go generationControl): the node's references, Core's
// retentions in the same order.
type Control struct {
	ID           string      `json:"id"`
	Sequence     uint64      `json:"sequence"`
	ConnectionID string      `json:"connection_id"`
	OwnerEpoch   uint64      `json:"owner_epoch"`
	References   []Reference `json:"references,omitempty"`
	Retentions   []Retention `json:"retentions,omitempty"`
}

// Request is Core's work for the node (wire.go request). The operation's
// own objects are kept as raw JSON: the stand-ins carry no provider
// operations and answer every request "unconfirmed".
type Request struct {
	DeploymentGeneration int64           `json:"deployment_generation"`
	ID                   string          `json:"id"`
	Sequence             uint64          `json:"sequence"`
	ConnectionID         string          `json:"connection_id"`
	OwnerEpoch           uint64          `json:"owner_epoch"`
	Operation            string          `json:"operation"`
	TimeoutMillis        int64           `json:"timeout_ms"`
	Reference            json.RawMessage `json:"reference"`
	Bootstrap            json.RawMessage `json:"bootstrap,omitempty"`
	Compute              json.RawMessage `json:"compute,omitempty"`
	Generation           json.RawMessage `json:"generation,omitempty"`
	Command              json.RawMessage `json:"command,omitempty"`
	Suspend              json.RawMessage `json:"suspend,omitempty"`
	Resume               json.RawMessage `json:"resume,omitempty"`
	Retained             json.RawMessage `json:"retained,omitempty"`
	Observation          json.RawMessage `json:"observation,omitempty"`
}

// Response answers a request.
type Response struct {
	ID           string          `json:"id"`
	ConnectionID string          `json:"connection_id"`
	ErrorCode    string          `json:"error_code,omitempty"`
	Info         json.RawMessage `json:"info,omitempty"`
	Compute      json.RawMessage `json:"compute,omitempty"`
	State        json.RawMessage `json:"state,omitempty"`
	Command      json.RawMessage `json:"command,omitempty"`
	Sample       json.RawMessage `json:"sample,omitempty"`
}

// Frame is every message of the connection (wire.go frame): which fields
// a type carries is checked by Decode and Encode.
type Frame struct {
	Version              int         `json:"version"`
	Type                 string      `json:"type"`
	GenerationManagement bool        `json:"generation_management,omitempty"`
	Identity             *Identity   `json:"identity,omitempty"`
	Health               *Health     `json:"health,omitempty"`
	ConnectionID         string      `json:"connection_id,omitempty"`
	OwnerEpoch           uint64      `json:"owner_epoch,omitempty"`
	Deployment           *Deployment `json:"deployment,omitempty"`
	Control              *Control    `json:"control,omitempty"`
	Request              *Request    `json:"request,omitempty"`
	Response             *Response   `json:"response,omitempty"`
}

// ErrMessage: a frame is not one the platform's peer would accept.
var ErrMessage = errors.New("invalid node protocol frame")

func invalid(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrMessage, fmt.Sprintf(format, a...))
}

// shape is one JSON object's fields: required, optional, and those of
// either that may be null (generation_json.go's lists).
type shape struct{ required, optional, nullable string }

var (
	frameShapes = map[string]shape{
		TypeHello:        {"version type identity health", "generation_management", ""},
		TypeWelcome:      {"version type connection_id owner_epoch", "deployment", ""},
		TypeHeartbeatAck: {"version type connection_id owner_epoch", "deployment", ""},
		TypeHeartbeat:    {"version type health connection_id owner_epoch", "", ""},
		TypeRetention:    {"version type control", "", ""},
		TypeRetentionAck: {"version type control deployment", "", ""},
		TypeRequest:      {"version type request", "", ""},
		TypeResponse:     {"version type response", "", ""},
	}
	deploymentShape  = shape{"generation specification_digest serving_generation", "", "serving_generation"}
	identityShape    = shape{"specification_digest deployment_generation node_id installation_id provider backend_fingerprint max_active max_retained", "", ""}
	healthShape      = shape{"provider_ready observed_at active_operations cpu_utilization total_memory_bytes effective_cpu_cores", "generations diagnostic cpu_count available_memory_bytes available_disk_bytes", "cpu_utilization total_memory_bytes effective_cpu_cores cpu_count available_memory_bytes available_disk_bytes"}
	observationShape = shape{"generation specification_digest state", "diagnostic", ""}
	referenceShape   = shape{"generation specification_digest", "", ""}
	retentionShape   = shape{"generation specification_digest keep", "", ""}
	requestShape     = shape{"deployment_generation id sequence connection_id owner_epoch operation timeout_ms reference", "bootstrap compute generation command suspend resume retained observation", ""}
	responseShape    = shape{"id connection_id", "error_code info compute state command sample", ""}
)

// fields splits one JSON object into its fields, refusing a field outside
// the shape, a repeated field, a null where the shape allows none, a
// missing required field and data after the object. encoding/json alone
// would take repeated and case-folded names and read null as zero.
func (s shape) fields(raw []byte) (map[string]json.RawMessage, error) {
	allowed := map[string]bool{}
	for _, k := range strings.Fields(s.required + " " + s.optional) {
		allowed[k] = true
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, invalid("not an object")
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, invalid("bad object")
		}
		if !allowed[key] {
			return nil, invalid("unknown field %q", key)
		}
		if out[key] != nil {
			return nil, invalid("repeated field %q", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, invalid("field %q: %v", key, err)
		}
		if bytes.Equal(v, []byte("null")) && !strings.Contains(" "+s.nullable+" ", " "+key+" ") {
			return nil, invalid("field %q is null", key)
		}
		out[key] = v
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, invalid("bad object")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, invalid("data after the object")
	}
	for _, k := range strings.Fields(s.required) {
		if out[k] == nil {
			return nil, invalid("field %q is missing", k)
		}
	}
	return out, nil
}

// records checks a list of at most MaxObservations objects of one shape.
func (s shape) records(raw json.RawMessage, name string) error {
	if raw == nil {
		return nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil || list == nil {
		return invalid("%s is not a list", name)
	}
	if len(list) > MaxObservations {
		return invalid("%s has more than %d entries", name, MaxObservations)
	}
	for _, e := range list {
		if _, err := s.fields(e); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// checkShapes checks a frame's JSON layout against its type's field lists.
func checkShapes(raw []byte) error {
	var head struct {
		Type string `json:"type"`
	}
	json.Unmarshal(raw, &head)
	fs, ok := frameShapes[head.Type]
	if !ok {
		return invalid("unknown frame type %q", head.Type)
	}
	v, err := fs.fields(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", head.Type, err)
	}
	for name, s := range map[string]shape{"deployment": deploymentShape, "identity": identityShape, "request": requestShape, "response": responseShape} {
		if v[name] != nil {
			if _, err := s.fields(v[name]); err != nil {
				return fmt.Errorf("%s %s: %w", head.Type, name, err)
			}
		}
	}
	if v["health"] != nil {
		h, err := healthShape.fields(v["health"])
		if err != nil {
			return fmt.Errorf("%s health: %w", head.Type, err)
		}
		if err := observationShape.records(h["generations"], "health generations"); err != nil {
			return err
		}
	}
	if v["control"] != nil {
		list, entry := "references", referenceShape
		if head.Type == TypeRetentionAck {
			list, entry = "retentions", retentionShape
		}
		c, err := shape{"id sequence connection_id owner_epoch " + list, "", ""}.fields(v["control"])
		if err != nil {
			return fmt.Errorf("%s control: %w", head.Type, err)
		}
		if err := entry.records(c[list], "control "+list); err != nil {
			return err
		}
	}
	return nil
}

// Decode reads one frame strictly, as the platform's peers do
// (wire.go decodeFrame): the field lists of its type, no unknown,
// repeated or null fields, version 5, and the values' ranges.
func Decode(msg []byte) (*Frame, error) {
	if err := checkShapes(msg); err != nil {
		return nil, err
	}
	var f Frame
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, invalid("%v", err)
	}
	if err := f.validate(len(msg)); err != nil {
		return nil, err
	}
	return &f, nil
}

// Encode writes a frame (version 5 when unset) after the checks Decode
// makes, so that neither stand-in sends what the platform would refuse.
func Encode(f Frame) ([]byte, error) {
	if f.Version == 0 {
		f.Version = ProtocolVersion
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	if _, err := Decode(b); err != nil {
		return nil, fmt.Errorf("refusing to send: %w", err)
	}
	return b, nil
}

// Send encodes f and writes it as one message.
func (c *Conn) Send(f Frame) error {
	b, err := Encode(f)
	if err != nil {
		return err
	}
	return c.WriteMessage(b)
}

// ValidGeneration: 1 ... MaxInt64.
func ValidGeneration(g int64) bool { return g > 0 && g <= math.MaxInt64 }

// ValidDigest: a specification digest, 64 lowercase hex digits.
func ValidDigest(d string) bool {
	b, err := hex.DecodeString(d)
	return err == nil && len(b) == 32 && hex.EncodeToString(b) == d
}

func validDiagnostic(d string) bool {
	if len(d) > 64 {
		return false
	}
	for _, r := range d {
		if (r < 'a' || r > 'z') && r != '_' {
			return false
		}
	}
	return true
}

// validate checks the values of a decoded frame (generation_wire.go
// validateVersionFrame).
func (f *Frame) validate(size int) error {
	if f.Version != ProtocolVersion {
		return invalid("version %d, not %d", f.Version, ProtocolVersion)
	}
	if f.Type != TypeRequest && f.Type != TypeResponse && size > MaxControlFrame {
		return invalid("a %s frame larger than %d bytes", f.Type, MaxControlFrame)
	}
	if f.GenerationManagement && f.Type != TypeHello {
		return invalid("generation_management outside hello")
	}
	if d := f.Deployment; d != nil && (!ValidGeneration(d.Generation) || !ValidDigest(d.SpecificationDigest) || d.ServingGeneration != nil && !ValidGeneration(*d.ServingGeneration)) {
		return invalid("bad deployment")
	}
	if id := f.Identity; id != nil && (!ident.CanonicalUUID(id.NodeID) || !ident.CanonicalUUID(id.InstallationID)) {
		return invalid("bad identity")
	}
	if h := f.Health; h != nil {
		if err := h.validate(); err != nil {
			return err
		}
	}
	if q := f.Request; q != nil && (!ValidGeneration(q.DeploymentGeneration) || q.Sequence < 1 || q.OwnerEpoch < 1 || !ident.CanonicalUUID(q.ConnectionID) || !ident.CanonicalUUID(q.ID) || q.TimeoutMillis < 1 || q.TimeoutMillis > 120000) {
		return invalid("bad request")
	}
	if c := f.Control; c != nil {
		if !ident.CanonicalUUID(c.ID) || !ident.CanonicalUUID(c.ConnectionID) || c.OwnerEpoch < 1 || c.Sequence < 1 || c.References != nil && c.Retentions != nil {
			return invalid("bad control")
		}
		seen := map[int64]bool{}
		for _, r := range c.References {
			if !ValidGeneration(r.Generation) || !ValidDigest(r.SpecificationDigest) || seen[r.Generation] {
				return invalid("bad reference")
			}
			seen[r.Generation] = true
		}
		for _, r := range c.Retentions {
			if !ValidGeneration(r.Generation) || !ValidDigest(r.SpecificationDigest) || seen[r.Generation] {
				return invalid("bad retention")
			}
			seen[r.Generation] = true
		}
	}
	connection := ident.CanonicalUUID(f.ConnectionID) && f.OwnerEpoch > 0
	switch f.Type {
	case TypeHello:
		if f.Identity == nil || f.Health == nil || f.Deployment != nil || f.Control != nil || f.Request != nil || f.Response != nil {
			return invalid("bad hello")
		}
		if !f.GenerationManagement && f.Health.Generations != nil {
			return invalid("generations from a node that does not manage them")
		}
	case TypeWelcome, TypeHeartbeatAck:
		if !connection || f.Identity != nil || f.Health != nil || f.Control != nil || f.Request != nil || f.Response != nil {
			return invalid("bad %s", f.Type)
		}
	case TypeHeartbeat:
		if !connection || f.Health == nil || f.Identity != nil || f.Deployment != nil || f.Control != nil || f.Request != nil || f.Response != nil {
			return invalid("bad heartbeat")
		}
	case TypeRetention:
		if f.Control == nil || f.Control.References == nil || f.Control.Retentions != nil || f.Deployment != nil || f.Health != nil || f.Identity != nil || f.Request != nil || f.Response != nil {
			return invalid("bad retention")
		}
	case TypeRetentionAck:
		if f.Control == nil || f.Control.Retentions == nil || f.Control.References != nil || f.Deployment == nil || f.Health != nil || f.Identity != nil || f.Request != nil || f.Response != nil {
			return invalid("bad retention_ack")
		}
	case TypeRequest:
		if f.Request == nil || f.Response != nil || f.Deployment != nil || f.Control != nil || f.Health != nil || f.Identity != nil {
			return invalid("bad request")
		}
	case TypeResponse:
		if f.Response == nil || f.Request != nil || f.Deployment != nil || f.Control != nil || f.Health != nil || f.Identity != nil {
			return invalid("bad response")
		}
	default:
		return invalid("unknown frame type %q", f.Type)
	}
	return nil
}

// validate checks a health's ranges (generation_wire.go
// validGenerationHealth).
func (h *Health) validate() error {
	if h.ObservedAt.IsZero() || h.ObservedAt.Year() < 1970 || h.ObservedAt.Year() > 9999 || h.ActiveOperations < 0 || h.ActiveOperations > MaxActiveOperations || !validDiagnostic(h.Diagnostic) {
		return invalid("bad health")
	}
	for _, v := range []*int64{h.CPUCount, h.TotalMemoryBytes, h.AvailableMemoryBytes, h.AvailableDiskBytes} {
		if v != nil && (*v < 0 || *v > 1<<53-1) {
			return invalid("bad health metric")
		}
	}
	for _, v := range []*float64{h.CPUUtilization, h.EffectiveCPUCores} {
		if v != nil && (math.IsNaN(*v) || math.IsInf(*v, 0) || *v < 0) {
			return invalid("bad health metric")
		}
	}
	if h.CPUUtilization != nil && *h.CPUUtilization > 1 || h.EffectiveCPUCores != nil && *h.EffectiveCPUCores == 0 ||
		h.TotalMemoryBytes != nil && (*h.TotalMemoryBytes == 0 || h.AvailableMemoryBytes != nil && *h.AvailableMemoryBytes > *h.TotalMemoryBytes) {
		return invalid("bad health metric")
	}
	seen := map[int64]bool{}
	for _, g := range h.Generations {
		if !ValidGeneration(g.Generation) || !ValidDigest(g.SpecificationDigest) || seen[g.Generation] ||
			g.State != StateReady && g.State != StatePreparing && g.State != StateFailed || g.State == StateReady && g.Diagnostic != "" || !validDiagnostic(g.Diagnostic) {
			return invalid("bad generation observation")
		}
		seen[g.Generation] = true
	}
	return nil
}

// Drop is a retention Core answered with keep false: the node may collect
// that generation (generations.go Drop in the platform's node program).
type Drop = Retention
