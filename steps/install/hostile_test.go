package install

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestEnsureHomeNeverChangesALinksTarget: a home that is a symbolic link
// (to a directory of root's) is refused, and while another process swaps
// the home between a directory and such a link, ensureHome never changes
// the target's owner or mode.
func TestEnsureHomeNeverChangesALinksTarget(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: gives the home to another uid")
	}
	base := t.TempDir()
	target := filepath.Join(base, "etc")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(target, 0o755)
	home := filepath.Join(base, "oac-node")
	if err := os.Symlink(target, home); err != nil {
		t.Fatal(err)
	}
	checkTarget := func() {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Stat(target, &st); err != nil || st.Uid != 0 || st.Mode&0o7777 != 0o755 {
			t.Fatalf("the link's target changed: uid %d mode %o %v", st.Uid, st.Mode&0o7777, err)
		}
	}
	if err := ensureHome(home, 65534, 65534); err == nil {
		t.Fatal("a home that is a link was accepted")
	} else {
		t.Logf("refused: %v", err)
	}
	checkTarget()

	// Swap the home between a directory and the link while ensureHome runs.
	os.Remove(home)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmpLink, tmpDir := home+".link", home+".dir"
		for !stop.Load() {
			os.Symlink(target, tmpLink)
			os.Rename(tmpLink, home) // the home is now the link
			os.Mkdir(tmpDir, 0o700)
			os.Remove(home)
			os.Rename(tmpDir, home) // and a directory again
		}
	}()
	deadline := time.Now().Add(time.Second)
	for i := 0; i < 3000 && time.Now().Before(deadline); i++ {
		ensureHome(home, 65534, 65534)
	}
	stop.Store(true)
	<-done
	checkTarget()
}

// TestPreflightDoesNotFollowALinkInTheHome: the older product's node root
// is looked for in the account's home through no link: a .parsar that
// points at a directory of root's holding nodes/<id> is refused as a
// link, not taken for the older product's node root.
func TestPreflightDoesNotFollowALinkInTheHome(t *testing.T) {
	root, p := testHost(t)
	elsewhere := filepath.Join(root, "elsewhere")
	if err := os.MkdirAll(filepath.Join(elsewhere, "nodes", testID), 0o700); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(p.Host.Home(), 0o700)
	if err := os.Symlink(elsewhere, filepath.Join(p.Host.Home(), ".parsar")); err != nil {
		t.Fatal(err)
	}
	err := FirstRefusal(p.Run(context.Background()))
	if err == nil || !strings.Contains(err.Error(), "symbolic link") || strings.Contains(err.Error(), "previous installer") || !strings.HasSuffix(err.Error(), "Nothing was changed.") {
		t.Fatalf("got %v, want a refusal of the link", err)
	}
}
