package noderoot

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/lease"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// GenerationConfig is the provider configuration a generation has on the
// node, and where it came from.
type GenerationConfig struct {
	Config *provider.Config
	// Base: the configuration is the node's provider.json.
	Base bool
	// Final: a published configuration (provider.json or <g>.json); else
	// a preparation plan.
	Final bool
	// ImportStarted: the Runtime import may have run (always for a final
	// configuration).
	ImportStarted bool
}

// FinalRel is <g>.json relative to the node root.
func FinalRel(g int64) string { return path.Join(layout.GenerationsDir, RecordName(g, ".json")) }

// ReadFinal reads the published <g>.json; found is false when absent.
func ReadFinal(d Data, g int64) (*provider.Config, bool, error) {
	data, err := d.Root().ReadFile(FinalRel(g), safefile.Expect{UID: d.UID(), Mode: 0o600, MaxSize: provider.MaxSize})
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("configuration of generation %d: %w", g, err)
	}
	c, err := provider.Parse(data)
	if err != nil {
		return nil, false, fmt.Errorf("configuration of generation %d: %w", g, err)
	}
	if c.Generation != g {
		return nil, false, fmt.Errorf("configuration %s names generation %d", FinalRel(g), c.Generation)
	}
	return c, true, nil
}

// ReadPlan reads <g>.preparing; found is false when absent. The plan's
// configuration is nil when the record carries none.
func ReadPlan(d Data, g int64) (lease.Preparing, *provider.Config, bool, error) {
	p, err := lease.ReadPreparing(d.Node().Generations(), g, d.UID())
	if errors.Is(err, os.ErrNotExist) {
		return lease.Preparing{}, nil, false, nil
	}
	if err != nil {
		return lease.Preparing{}, nil, false, fmt.Errorf("preparation plan of generation %d: %w", g, err)
	}
	if p.Configuration == nil {
		return p, nil, true, nil
	}
	c, err := provider.Parse(p.Configuration)
	if err != nil {
		return lease.Preparing{}, nil, false, fmt.Errorf("preparation plan of generation %d: %w", g, err)
	}
	if c.Generation != g {
		return lease.Preparing{}, nil, false, fmt.Errorf("preparation plan of generation %d names generation %d", g, c.Generation)
	}
	return p, c, true, nil
}

// Dropped reports whether generation g has a dropped marker (in any form).
func Dropped(d Data, g int64) (bool, error) {
	return safefile.Exists(filepath.Join(d.Node().Generations(), RecordName(g, ".dropped")))
}

// CurrentConfig finds the configuration of the run's generation: the base
// provider.json for the base generation, else the published <g>.json, else
// the plan in <g>.preparing. It returns nil when there is none.
func CurrentConfig(d Data) (*GenerationConfig, error) {
	id := d.Identity()
	base, err := d.Base()
	if err != nil {
		return nil, err
	}
	if base.Generation == id.Generation {
		return &GenerationConfig{Config: base, Base: true, Final: true, ImportStarted: true}, nil
	}
	c, ok, err := ReadFinal(d, id.Generation)
	if err != nil {
		return nil, err
	}
	if ok {
		return &GenerationConfig{Config: c, Final: true, ImportStarted: true}, nil
	}
	p, pc, ok, err := ReadPlan(d, id.Generation)
	if err != nil || !ok || pc == nil {
		return nil, err
	}
	if p.Identity != id {
		return nil, fmt.Errorf("%w: the preparation plan of generation %d is for %s", ErrSpecification, id.Generation, p.Identity)
	}
	return &GenerationConfig{Config: pc, ImportStarted: p.ImportStarted}, nil
}

// ReleaseRel is the directory of a configuration's Runtime files relative
// to the node root: "." or releases/<source_commit>.
func ReleaseRel(d Data, c *provider.Config) (string, error) {
	dir, err := c.ReleaseDir()
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(d.Node().Root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: Runtime files in %s, outside the node root", provider.ErrPlanMismatch, dir)
	}
	if rel != "." && rel != path.Join(layout.ReleasesDir, c.Specification.Runtime.SourceCommit) {
		return "", fmt.Errorf("%w: Runtime files in %s, not the node root or releases/%s", provider.ErrPlanMismatch, dir, c.Specification.Runtime.SourceCommit)
	}
	return rel, nil
}

// CheckIdentity requires a configuration to be this generation's, with the
// specification the run is bound to.
func CheckIdentity(d Data, c *provider.Config) error {
	id := d.Identity()
	switch {
	case c.InstallationID != id.InstallationID:
		return fmt.Errorf("%w: the configuration of generation %d names installation %s", ErrSpecification, id.Generation, c.InstallationID)
	case c.Generation != id.Generation:
		return fmt.Errorf("%w: the configuration names generation %d, not %d", ErrSpecification, c.Generation, id.Generation)
	case c.Specification.Digest() != id.SpecificationDigest:
		return fmt.Errorf("%w: generation %d retains specification %s, not %s", ErrSpecification, id.Generation, c.Specification.Digest(), id.SpecificationDigest)
	}
	return nil
}

// Base implements Data.
func (e *Env) Base() (*provider.Config, error) {
	if e.base != nil {
		return e.base, nil
	}
	data, err := e.ReadPrivate(layout.ProviderConfigFile, provider.MaxSize)
	if err != nil {
		return nil, fmt.Errorf("base configuration: %w", err)
	}
	c, err := provider.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("base configuration %s: %w", e.node.ProviderConfig(), err)
	}
	if c.InstallationID != e.opts.Identity.InstallationID {
		return nil, fmt.Errorf("base configuration %s names installation %s", e.node.ProviderConfig(), c.InstallationID)
	}
	e.base = c
	return c, nil
}
