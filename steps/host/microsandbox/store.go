package microsandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// MarkerName is the store's ownership marker.
const MarkerName = "oac-installation.json"

type marker struct {
	InstallationID ident.InstallationID `json:"installation_id"`
}

var markerFormat = strictjson.Format{MaxSize: 4096}

func markerBytes(installationID ident.InstallationID) []byte {
	data, _ := json.MarshalIndent(marker{installationID}, "", "  ")
	return append(data, '\n')
}

// ClaimStore makes store (a path from provider.StorePath or provider.GenerationStorePath) the
// installation's: it creates <home>/.oac/m and the store with mode 0700
// when missing (refusing symbolic links and other owners than uid), and
// publishes the ownership marker in an empty store. A store whose marker
// names this installation is accepted as it is; a non-empty store without
// a marker, or with another installation's, is ErrStoreNotOwned.
func ClaimStore(store string, installationID ident.InstallationID, uid int) error {
	parent := filepath.Dir(store) // <home>/.oac/m
	oac := filepath.Dir(parent)   // <home>/.oac
	home, err := safefile.OpenRoot(filepath.Dir(oac))
	if err != nil {
		return fmt.Errorf("claim microsandbox store %s: %w", store, err)
	}
	defer home.Close()
	dirExp := safefile.Expect{UID: uid}
	rels := []string{layout.OacDir, layout.MicrosandboxStoresRel, filepath.Join(layout.MicrosandboxStoresRel, filepath.Base(store))}
	for _, rel := range rels {
		if err := home.Mkdir(rel, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("claim microsandbox store %s: %w", store, err)
		}
		d, err := home.OpenDir(rel, dirExp)
		if err != nil {
			return fmt.Errorf("claim microsandbox store %s: %w", store, err)
		}
		d.Close()
	}
	root, err := home.OpenDir(rels[2], safefile.Expect{UID: uid, Mode: 0o700})
	if err != nil {
		return fmt.Errorf("claim microsandbox store %s: %w", store, err)
	}
	defer root.Close()
	switch err := checkMarker(root, installationID, uid); {
	case err == nil:
		return nil
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	names, err := root.ReadDir()
	if err != nil {
		return fmt.Errorf("claim microsandbox store %s: %w", store, err)
	}
	if len(names) > 0 {
		return fmt.Errorf("%w: %s holds %d entries but no %s", ErrStoreNotOwned, store, len(names), MarkerName)
	}
	if err := root.PublishOnce(MarkerName, markerBytes(installationID), 0o600); err != nil {
		return fmt.Errorf("claim microsandbox store %s: %w", store, err)
	}
	return nil
}

// CheckStoreOwner requires the store's marker to name installationID (a
// private 0600 file of uid, exact key set). Collection and uninstall call
// it before touching the store; any failure keeps the bytes. A missing
// marker is ErrStoreNotOwned too.
func CheckStoreOwner(store string, installationID ident.InstallationID, uid int) error {
	root, err := safefile.OpenRoot(store)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStoreNotOwned, err)
	}
	defer root.Close()
	if err := checkMarker(root, installationID, uid); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s has no %s", ErrStoreNotOwned, store, MarkerName)
		}
		return err
	}
	return nil
}

// checkMarker reads the marker; a missing marker matches os.ErrNotExist.
func checkMarker(root *safefile.Root, installationID ident.InstallationID, uid int) error {
	data, err := root.ReadFile(MarkerName, safefile.Expect{UID: uid, Mode: 0o600, MaxSize: int64(markerFormat.MaxSize)})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return err
		}
		return fmt.Errorf("%w: %v", ErrStoreNotOwned, err)
	}
	var m marker
	if err := markerFormat.Decode(data, &m); err != nil || m.InstallationID == "" {
		return fmt.Errorf("%w: %s is not an ownership marker", ErrStoreNotOwned, filepath.Join(root.Path(), MarkerName))
	}
	if m.InstallationID != installationID {
		return fmt.Errorf("%w: %s names installation %s", ErrStoreNotOwned, root.Path(), m.InstallationID)
	}
	return nil
}
