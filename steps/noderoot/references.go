package noderoot

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
)

// Retained is a configuration that keeps references on the node: a
// published <h>.json or the base provider.json of a generation that is not
// dropped, or the plan of a generation still being prepared.
type Retained struct {
	Generation int64
	Where      string
	Config     *provider.Config
}

// RetainedConfigs lists every configuration that keeps references, except
// generation g's. A configuration that cannot be read proves nothing about
// what it references, so it refuses (ErrReferenced).
func RetainedConfigs(d Data, g int64) ([]Retained, error) {
	dir, err := d.Root().OpenDir(layout.GenerationsDir, safefile.Expect{UID: d.UID()})
	if err != nil {
		return nil, err
	}
	names, err := dir.ReadDir()
	dir.Close()
	if err != nil {
		return nil, err
	}
	kinds := map[int64]map[string]bool{}
	for _, name := range names {
		for _, suffix := range []string{".json", ".preparing", ".dropped"} {
			if h, ok := strings.CutSuffix(name, suffix); ok {
				if n := generationNumber(h); n > 0 {
					if kinds[n] == nil {
						kinds[n] = map[string]bool{}
					}
					kinds[n][suffix] = true
				}
			}
		}
	}
	unreadable := func(h int64, err error) error {
		return fmt.Errorf("%w: cannot tell what generation %d references: %w", ErrReferenced, h, err)
	}
	var out []Retained
	for h, k := range kinds {
		if h == g || k[".dropped"] {
			continue
		}
		switch {
		case k[".json"]:
			c, _, err := ReadFinal(d, h)
			if err != nil {
				return nil, unreadable(h, err)
			}
			out = append(out, Retained{h, FinalRel(h), c})
		case k[".preparing"]:
			_, c, _, err := ReadPlan(d, h)
			if err != nil {
				return nil, unreadable(h, err)
			}
			if c == nil {
				return nil, unreadable(h, fmt.Errorf("its preparation plan has no configuration"))
			}
			out = append(out, Retained{h, layout.GenerationsDir + "/" + RecordName(h, ".preparing"), c})
		}
	}
	base, err := d.Base()
	if err != nil {
		return nil, err
	}
	if base.Generation != g && !kinds[base.Generation][".dropped"] && !kinds[base.Generation][".json"] {
		out = append(out, Retained{base.Generation, layout.ProviderConfigFile, base})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Generation < out[j].Generation })
	return out, nil
}

// generationNumber parses [1-9][0-9]*; anything else is 0.
func generationNumber(s string) int64 {
	if s == "" || s[0] < '1' || s[0] > '9' {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != s {
		return 0
	}
	return n
}
