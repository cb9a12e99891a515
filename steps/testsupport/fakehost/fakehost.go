package fakehost

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/accounts/accountstest"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/systemd/systemdtest"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Host is a host root for a test whose service-account child runs as
// another user.
type Host struct {
	// Base is the new directory (mode 0755, so that the account traverses
	// it), removed when the test ends.
	Base string
	Host layout.Host
	// Accounts is the account adapter's fake over Host.Root's databases,
	// whose /etc/group has root and docker (gid 4242).
	Accounts *accountstest.Fake
	DBs      accounts.Databases
	// Systemd is the systemd fake over Host.Root's /etc/systemd/system.
	Systemd *systemdtest.Fake
	// Binary is this test binary, captured for privsep.Options.Binary.
	Binary *privsep.Binary
}

// New makes a Host in a new directory named prefix* in the system's
// temporary directory (not t.TempDir(), which the account cannot
// traverse), with dirs (relative paths) made below the host root. It
// skips the test unless it runs as root.
func New(t *testing.T, prefix string, dirs ...string) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the service-account child runs as another user")
	}
	base, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	h := &Host{Base: base, Host: layout.Host{Root: filepath.Join(base, "host")}}
	for _, d := range dirs {
		if err := os.MkdirAll(filepath.Join(h.Host.Root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.MkdirAll(filepath.Join(base, "engine"), 0o777)
	os.Chmod(filepath.Join(base, "engine"), 0o777)
	if h.Accounts, err = accountstest.New(h.Host.Root); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(h.Host.Root, "etc/group"), []byte("root:x:0:\ndocker:x:4242:\n"), 0o644)
	h.DBs = accounts.Under(h.Host.Root)
	h.Systemd = systemdtest.New(filepath.Join(h.Host.Root, "etc/systemd/system"))
	if h.Binary, err = privsep.Capture(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Binary.Close() })
	return h
}

// EngineDir returns <Base>/engine from the account's home
// (<Base>/host/var/lib/oac-node), as the child finds it.
func EngineDir(home string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(home)))), "engine")
}

// EngineDir returns <Base>/engine.
func (h *Host) EngineDir() string { return filepath.Join(h.Base, "engine") }
