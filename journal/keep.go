package journal

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// KeepAside renames the journal at path to the first free <path>.<n>
// (never replacing one) and fsyncs its directory, so that the next run
// starts a new journal while the old one stays as a receipt.
func KeepAside(path string) error {
	for n := 1; ; n++ {
		err := unix.Renameat2(unix.AT_FDCWD, path, unix.AT_FDCWD, path+"."+strconv.Itoa(n), unix.RENAME_NOREPLACE)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return fmt.Errorf("keep the journal %s: %w", path, err)
		}
		return safefile.SyncDir(filepath.Dir(path))
	}
}
