package uninstall

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// ProcRunning reports whether a process under procfs (normally /proc)
// runs with the real uid uid.
func ProcRunning(procfs string) Processes {
	return func(uid int) (bool, error) {
		entries, err := os.ReadDir(procfs)
		if err != nil {
			return false, fmt.Errorf("list processes: %w", err)
		}
		for _, ent := range entries {
			if _, err := strconv.Atoi(ent.Name()); err != nil {
				continue
			}
			var st unix.Stat_t
			if unix.Stat(procfs+"/"+ent.Name(), &st) != nil {
				continue // ended meanwhile
			}
			if int(st.Uid) == uid {
				return true, nil
			}
		}
		return false, nil
	}
}
