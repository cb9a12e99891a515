package workflow

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"
)

// A full file system names itself and what to free, once, before the
// rerun; any other error gets no such advice.
func TestNoSpace(t *testing.T) {
	full := fmt.Errorf("write journal: %w", &fs.PathError{Op: "write", Path: "/var/lib/oac-node-install/x/uninstall.journal", Err: syscall.ENOSPC})
	got := NoSpace(full, "/var/lib/oac-node")
	if !strings.HasPrefix(got, "The file system holding /var/lib/oac-node-install/x is full") || !strings.Contains(got, "df -h /var/lib/oac-node-install/x") ||
		!strings.Contains(got, "sudo du -sh /var/lib/oac-node") || !strings.HasSuffix(got, ", then") {
		t.Errorf("NoSpace = %q", got)
	}
	rename := &os.LinkError{Op: "rename", Old: "/etc/oac-node/.x.tmp", New: "/etc/oac-node/x", Err: syscall.ENOSPC}
	if got := NoSpace(rename, "/h"); !strings.Contains(got, "holding /etc/oac-node is full") {
		t.Errorf("NoSpace(rename) = %q", got)
	}
	if got := NoSpace(errors.New("no"), "/h"); got != "" {
		t.Errorf("NoSpace of another error = %q", got)
	}
	if err := Advise(full, "then rerun."); err.Error() != full.Error()+". then rerun." || !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Advise = %v", err)
	}
	if err := Advise(full, ""); err != full {
		t.Errorf("Advise without advice = %v", err)
	}
}
