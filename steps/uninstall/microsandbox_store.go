package uninstall

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/microsandbox"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/workflow"
)

// FactStoresKept is the space-separated list of microsandbox stores kept
// because Core did not confirm the removal (--force).
const FactStoresKept = "stores_kept"

// removeStores deletes every microsandbox store under <home>/.oac/m whose
// oac-installation.json names the installation, once Core confirmed the
// removal (or the node never registered); with --force it keeps them and
// prints the command that removes each. Then .oac/nodes, .oac/m and .oac
// go when empty.
func removeStores(in NodeOptions, req Input, facts map[string]string) (workflow.Result, error) {
	res := workflow.Result{Event: workflow.EventStoreHandled}
	stores, err := installationStores(in, req.InstallationID)
	if err != nil {
		return workflow.Result{}, err
	}
	h, err := safefile.OpenRoot(in.Home)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil // no home, no store
	}
	if err != nil {
		return workflow.Result{}, err
	}
	defer h.Close()
	var kept []string
	for _, st := range stores {
		if facts[FactCore] == CoreForced || req.Force {
			in.logf("keep the microsandbox store %s (Core did not confirm the removal); remove it as the node account, away from this terminal, with `sudo systemd-run --uid=%s --wait --collect --quiet rm -rf %s`", st, layout.Account, st)
			kept = append(kept, st)
			continue
		}
		in.logf("remove the microsandbox store %s", st)
		rel, err := filepath.Rel(in.Home, st)
		if err == nil {
			err = h.RemoveAll(rel)
		}
		if err != nil {
			return workflow.Result{}, fmt.Errorf("remove the microsandbox store: %w", err)
		}
	}
	if len(kept) > 0 {
		res.Facts = map[string]string{FactStoresKept: strings.Join(kept, " ")}
	}
	for _, dir := range []string{layout.NodesRel, layout.MicrosandboxStoresRel, layout.OacDir} {
		if err := h.RemoveEmptyDir(dir); err != nil {
			return workflow.Result{}, err
		}
	}
	return res, nil
}

// installationStores lists the stores under <home>/.oac/m whose marker
// names id (a link, or a store without a readable marker, is not one).
func installationStores(in NodeOptions, id ident.InstallationID) ([]string, error) {
	m := filepath.Join(in.Home, layout.MicrosandboxStoresRel)
	root, err := safefile.OpenRootIn(in.Home, layout.MicrosandboxStoresRel, safefile.Expect{UID: safefile.AnyUID})
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer root.Close()
	names, err := root.ReadDir()
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		data, err := root.ReadFile(filepath.Join(n, microsandbox.MarkerName), safefile.Expect{UID: in.UID, MaxSize: 4096})
		if err != nil {
			continue
		}
		var mk struct {
			InstallationID ident.InstallationID `json:"installation_id"`
		}
		if json.Unmarshal(data, &mk) == nil && mk.InstallationID == id {
			out = append(out, filepath.Join(m, n))
		}
	}
	return out, nil
}
