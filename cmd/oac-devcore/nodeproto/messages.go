package nodeproto

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// ProtocolVersion is the node protocol version (CONTRACT §6.2).
const ProtocolVersion = 5

// Timing of the connection (CONTRACT §6.2).
const (
	HelloTimeout      = 15 * time.Second
	HeartbeatInterval = 10 * time.Second
	ReadTimeout       = 35 * time.Second
	OnlineWindow      = 45 * time.Second
)

// MaxObservations bounds the generation observations of one heartbeat.
const MaxObservations = 8

// Message types.
const (
	TypeHello      = "hello"
	TypeWelcome    = "welcome"
	TypeHeartbeat  = "heartbeat"
	TypeDeployment = "deployment"
	TypeDrop       = "drop"
)

// Generation observation states.
const (
	StateReady     = "ready"
	StatePreparing = "preparing"
	StateFailed    = "failed"
)

// Identity is the node's identity as it enrolled.
type Identity struct {
	NodeID               string `json:"node_id"`
	InstallationID       string `json:"installation_id"`
	Provider             string `json:"provider"`
	DeploymentGeneration int64  `json:"deployment_generation"`
	SpecificationDigest  string `json:"specification_digest"`
}

// Health is the node's provider readiness. Diagnostic is one of the codes
// of CONTRACT §6.1, empty when ready.
type Health struct {
	ProviderReady    bool   `json:"provider_ready"`
	Diagnostic       string `json:"diagnostic,omitempty"`
	ObservedAt       string `json:"observed_at"` // RFC 3339
	ActiveOperations int    `json:"active_operations"`
}

// Deployment is Core's target for a generation-managing node.
type Deployment struct {
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
	ServingGeneration   int64  `json:"serving_generation"`
}

// Observation is the node's view of one generation.
type Observation struct {
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
	State               string `json:"state"`
	Diagnostic          string `json:"diagnostic,omitempty"`
}

// Hello is the node's first message.
type Hello struct {
	Type                 string   `json:"type"`
	ProtocolVersion      int      `json:"protocol_version"`
	Identity             Identity `json:"identity"`
	Health               Health   `json:"health"`
	GenerationManagement bool     `json:"generation_management"`
}

// Welcome is Core's answer to hello.
type Welcome struct {
	Type         string      `json:"type"`
	ConnectionID string      `json:"connection_id"`
	OwnerEpoch   uint64      `json:"owner_epoch"`
	Deployment   *Deployment `json:"deployment,omitempty"`
}

// Heartbeat is the node's periodic report.
type Heartbeat struct {
	Type        string        `json:"type"`
	Health      Health        `json:"health"`
	Generations []Observation `json:"generations"`
}

// DeploymentChange tells a connected node about a new target.
type DeploymentChange struct {
	Type       string     `json:"type"`
	Deployment Deployment `json:"deployment"`
}

// Drop grants the collection of a generation.
type Drop struct {
	Type                string `json:"type"`
	Generation          int64  `json:"generation"`
	SpecificationDigest string `json:"specification_digest"`
}

// ErrMessage: a message is not valid JSON of a known type.
var ErrMessage = errors.New("invalid node protocol message")

// TypeOf returns a message's type.
func TypeOf(msg []byte) (string, error) {
	var env struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(msg, &env); err != nil || env.Type == "" {
		return "", fmt.Errorf("%w: no type", ErrMessage)
	}
	return env.Type, nil
}

// Decode decodes msg into v strictly: unknown fields and trailing data
// are refused.
func Decode(msg []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(msg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMessage, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: data after the object", ErrMessage)
	}
	return nil
}

// Send encodes v and writes it as one message.
func (c *Conn) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return c.WriteMessage(b)
}
