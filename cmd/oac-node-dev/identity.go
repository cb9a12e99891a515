package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// lockName is the node program's lock in the state directory, beside
// its identity record (layout.IdentityFileName, CONTRACT §3).
const lockName = "identity.lock"

// lockState takes identity.lock (LOCK_EX|LOCK_NB): one node process per
// state directory. The lock lives until Unlock.
func lockState(stateDir string) (*safefile.FileLock, error) {
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory %s: %w", stateDir, err)
	}
	l, err := safefile.TryLock(filepath.Join(stateDir, lockName), 0o600)
	if errors.Is(err, safefile.ErrLocked) {
		return nil, fmt.Errorf("another node process uses %s", stateDir)
	}
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lockName, err)
	}
	return l, nil
}

// readIdentity reads identity.json strictly (the installer's parser); it
// must be a private regular file. A missing file is os.ErrNotExist.
func readIdentity(stateDir string) (*noderoot.NodeIdentity, error) {
	path := filepath.Join(stateDir, layout.IdentityFileName)
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
		return nil, fmt.Errorf("%s must be a regular file of mode 0600", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, noderoot.MaxIdentitySize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	id, err := noderoot.ParseNodeIdentity(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return id, nil
}

// identityTemp is the prefix of identity.json's temporary file
// (.identity-identity.json), a name the platform's readers know.
const identityTemp = ".identity-"

// writeIdentity publishes identity.json atomically: temporary file
// .identity-*, fsync, rename, fsync of the directory.
func writeIdentity(stateDir string, id *noderoot.NodeIdentity) error {
	data, err := json.Marshal(id)
	if err != nil {
		return err
	}
	r, err := safefile.OpenRoot(stateDir)
	if err != nil {
		return fmt.Errorf("write %s: %w", layout.IdentityFileName, err)
	}
	defer r.Close()
	return r.AtomicWriteTemp(layout.IdentityFileName, identityTemp, append(data, '\n'), 0o600)
}
