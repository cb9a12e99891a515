package journal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Receipt policy: pruned. A journal whose run ended, or that a new run
// must not continue, is kept aside as a receipt <path>.<n> for the
// operator and support (what ran, when, how it ended). Every install and
// uninstall of an installation keeps one or two, so a host that installs
// and uninstalls one id again and again would gather them without end (50
// cycles: 103 files, 471 KB). Only the newest KeepReceipts of each journal
// path are kept: enough to read back across several attempts and the
// cycles before them, bounded in number and size. The run records in
// /var/lib/oac-node-install/runs say how each run ended, and nothing
// reads a receipt to decide (a rerun reads only the live journal), so
// pruning the oldest loses no decision.

// KeepReceipts is how many receipts of one journal path stay.
const KeepReceipts = 10

// KeepAside renames the journal at path to <path>.<n>, n one more than the
// highest receipt number there (never replacing one), fsyncs its
// directory, then removes the receipts older than the newest KeepReceipts,
// so that the next run starts a new journal while the old one stays as a
// receipt.
func KeepAside(path string) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("keep the journal %s: %w", path, err)
	}
	var nums []int
	top := 0
	for _, e := range entries {
		if n, ok := receiptNumber(base, e.Name()); ok {
			nums = append(nums, n)
			top = max(top, n)
		}
	}
	n := top + 1
	for ; ; n++ {
		err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, path+"."+strconv.Itoa(n), unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return fmt.Errorf("keep the journal %s: %w", path, err)
		}
		break
	}
	if err := safefile.SyncDir(filepath.Dir(path)); err != nil {
		return err
	}
	// The receipt just made is durable: a crash in the pruning leaves at
	// most more receipts than the policy keeps, never fewer.
	pruned := false
	for _, old := range nums {
		if old <= n-KeepReceipts {
			if err := os.Remove(path + "." + strconv.Itoa(old)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("prune the journal receipt %s.%d: %w", path, old, err)
			}
			pruned = true
		}
	}
	if pruned {
		return safefile.SyncDir(filepath.Dir(path))
	}
	return nil
}

// receiptNumber reports whether name is a receipt of the journal named
// base (base.<n>, n a positive decimal number), and its n.
func receiptNumber(base, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, base+".")
	if !ok || rest == "" || strings.TrimLeft(rest, "0123456789") != "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}
