package testhost

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// watched are the machine's paths a test host must leave as they were:
// the account databases, systemd's unit directory, the installer's records
// and the kernel's core pattern (which systemd as PID 1 writes when it
// may).
var watched = []string{
	"/etc/passwd", "/etc/group", "/etc/shadow", "/etc/gshadow",
	"/etc/systemd/system", "/etc/oac-node", "/proc/sys/kernel/core_pattern",
}

// snapshot maps each path under the watched trees to a description of
// what is there: type and mode, and the link target or content hash.
type snapshot map[string]string

func takeSnapshot() (snapshot, error) {
	s := snapshot{}
	for _, root := range watched {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if errors.Is(err, fs.ErrNotExist) {
				s[p] = "absent"
				return nil
			}
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			desc := fmt.Sprintf("%v", fi.Mode())
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, _ := os.Readlink(p)
				desc += " -> " + target
			case fi.Mode().IsRegular():
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				sum := sha256.Sum256(b)
				desc += " " + hex.EncodeToString(sum[:])
			}
			s[p] = desc
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", root, err)
		}
	}
	return s, nil
}

// diff lists what differs between two snapshots, sorted.
func (before snapshot) diff(after snapshot) []string {
	var out []string
	for p, was := range before {
		if now, ok := after[p]; !ok {
			out = append(out, fmt.Sprintf("%s: was %s, now gone", p, was))
		} else if now != was {
			out = append(out, fmt.Sprintf("%s: was %s, now %s", p, was, now))
		}
	}
	for p, now := range after {
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("%s: new, %s", p, now))
		}
	}
	sort.Strings(out)
	return out
}
