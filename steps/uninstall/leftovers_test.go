package uninstall

import (
	"os"
	"path/filepath"
	"testing"
)

// TestUninstallRemovesAKilledWritesTemporaries: an install killed inside
// the atomic write of the unit, the env file or the host record leaves
// that write's temporary file (".<name>.tmp") beside it; uninstall removes
// it with the file, so the host is as before the installation.
func TestUninstallRemovesAKilledWritesTemporaries(t *testing.T) {
	f := newHostFixture(t)
	f.install(t)
	for _, p := range []string{f.host.Unit(id), f.host.EnvFile(id), f.host.Record(id)} {
		tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".tmp")
		must(t, os.WriteFile(tmp, []byte("partial"), 0o600))
	}
	if _, err := f.uninstall(t, false); err != nil {
		t.Fatalf("%v\n%s", err, f.out.String())
	}
	if d := f.leftovers(t); d != "" {
		t.Errorf("the host differs from before the installation:\n%s", d)
	}
}
