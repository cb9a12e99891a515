package core

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/release"
)

// MaxConfigurationSize bounds Core's configuration answer.
const MaxConfigurationSize = 16384

// Configuration is Core's configuration answer (CONTRACT §2.2), validated
// in itself: the specification parses canonically for the provider and the
// digest Core sent is the digest of that specification.
type Configuration struct {
	InstallationID      ident.InstallationID
	Provider            string
	CoreURL             string // origin
	Generation          int64
	Specification       *release.Specification
	SpecificationDigest string
	MaxActive           int64
	MaxRetained         int64
}

// MarshalJSON writes the configuration in Core's answer form, which
// ParseConfiguration reads back.
func (c *Configuration) MarshalJSON() ([]byte, error) {
	spec, err := c.Specification.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"installation_id": c.InstallationID, "provider": c.Provider, "core_url": c.CoreURL, "generation": c.Generation,
		"specification": json.RawMessage(spec), "specification_digest": c.SpecificationDigest,
		"max_active": c.MaxActive, "max_retained": c.MaxRetained,
	})
}

// configurationAnswer is the configuration answer as Core sends it.
type configurationAnswer struct {
	InstallationID      ident.InstallationID `json:"installation_id"`
	Provider            string               `json:"provider"`
	CoreURL             string               `json:"core_url"`
	Generation          int64                `json:"generation"`
	Specification       json.RawMessage      `json:"specification"`
	SpecificationDigest string               `json:"specification_digest"`
	MaxActive           int64                `json:"max_active"`
	MaxRetained         int64                `json:"max_retained"`
}

// Unknown top-level keys are skipped: newer Cores add some. The
// specification is strict, because its digest covers it.
var configurationFormat = strictjson.Format{MaxSize: MaxConfigurationSize, AllowUnknownKeys: true}

// printableASCII reports whether s is non-empty printable ASCII without
// spaces.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// ParseConfiguration validates Core's configuration answer in itself.
func ParseConfiguration(body []byte) (*Configuration, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrAnswer, fmt.Sprintf(format, args...))
	}
	var a configurationAnswer
	if err := configurationFormat.Decode(body, &a); err != nil {
		return nil, bad("%v", err)
	}
	c := &Configuration{
		InstallationID:      a.InstallationID,
		Provider:            a.Provider,
		CoreURL:             a.CoreURL,
		Generation:          a.Generation,
		SpecificationDigest: a.SpecificationDigest,
		MaxActive:           a.MaxActive,
		MaxRetained:         a.MaxRetained,
	}
	for _, r := range []struct {
		key         string
		n, min, max int64
	}{
		{"generation", c.Generation, 1, math.MaxInt64},
		{"max_active", c.MaxActive, 1, 1000000},
		{"max_retained", c.MaxRetained, c.MaxActive, 1000000},
	} {
		if r.n < r.min || r.n > r.max {
			return nil, bad("%s must be an integer from %d to %d", r.key, r.min, r.max)
		}
	}
	switch c.Provider {
	case release.ProviderDocker, release.ProviderMicrosandbox:
	default:
		return nil, bad("provider %q is not a node provider", c.Provider)
	}
	// The values root compares and prints (never echoed here: a hostile
	// Core chooses them).
	if !c.InstallationID.Valid() {
		return nil, bad("installation_id is not a canonical UUID")
	}
	if !printableASCII(c.CoreURL) {
		return nil, bad("core_url holds characters no origin has")
	}
	if _, err := provider.CheckOrigin(strings.TrimSuffix(c.CoreURL, "/")); err != nil {
		return nil, bad("core_url is not an http(s) origin")
	}
	var err error
	if c.Specification, err = release.ParseSpecification(c.Provider, a.Specification); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrAnswer, err)
	}
	if !release.IsSHA256(c.SpecificationDigest) || c.Specification.Digest() != c.SpecificationDigest {
		return nil, bad("specification_digest is not the digest of the specification")
	}
	return c, nil
}
