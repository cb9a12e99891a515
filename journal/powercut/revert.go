//go:build crashtest

package powercut

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// PowerCut reverts the backing directory to its durable state: every file
// to its durable content, mode and owner, every directory to its durable
// entries; a name never made durable disappears, a removed or replaced
// durable name comes back with its inode. Call it only while no process
// uses the mount (the process under test was killed). Afterwards the
// reverted state is the durable state. It returns the paths whose state the
// cut changed or removed, sorted.
func (f *FS) PowerCut() ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	before, err := fingerprint(f.backing)
	if err != nil {
		return nil, err
	}
	if err := f.clear(f.backing); err != nil {
		return nil, err
	}
	root := f.durable[f.rootIno]
	if err := setMeta(f.backing, root); err != nil {
		return nil, err
	}
	if err := f.place(f.rootIno, f.backing, map[uint64]string{}); err != nil {
		return nil, err
	}
	if err := f.captureAll(); err != nil {
		return nil, err
	}
	after, err := fingerprint(f.backing)
	if err != nil {
		return nil, err
	}
	var lost []string
	for p, v := range before {
		if after[p] != v {
			lost = append(lost, p)
		}
	}
	sort.Strings(lost)
	f.stats.Cuts++
	f.stats.Lost += len(lost)
	return lost, nil
}

// clear empties dir bottom-up: durable inodes move to limbo (one name each),
// everything else is removed.
func (f *FS) clear(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("power cut: %w", err)
	}
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return fmt.Errorf("power cut: %w", err)
		}
		kind := st.Mode & syscall.S_IFMT
		s := f.durable[st.Ino]
		keep := s != nil && s.mode&syscall.S_IFMT == kind && (kind == syscall.S_IFDIR || kind == syscall.S_IFREG)
		if kind == syscall.S_IFDIR {
			if err := f.clear(p); err != nil {
				return err
			}
		}
		switch {
		case !keep && kind == syscall.S_IFDIR:
			err = syscall.Rmdir(p)
		case !keep:
			err = syscall.Unlink(p)
		case exists(f.limboPath(st.Ino)):
			err = syscall.Unlink(p) // another name of a hard-linked file
		default:
			err = syscall.Rename(p, f.limboPath(st.Ino))
		}
		if err != nil {
			return fmt.Errorf("power cut: clear %s: %w", p, err)
		}
	}
	return nil
}

// place fills dir, the durable directory ino, with its durable entries.
func (f *FS) place(ino uint64, dir string, placed map[uint64]string) error {
	for name, child := range f.durable[ino].entries {
		s := f.durable[child]
		p := filepath.Join(dir, name)
		var err error
		switch s.mode & syscall.S_IFMT {
		case syscall.S_IFDIR:
			if _, ok := placed[child]; ok {
				continue
			}
			placed[child] = p
			if err = syscall.Rename(f.limboPath(child), p); errors.Is(err, syscall.ENOENT) {
				err = syscall.Mkdir(p, 0o700)
			}
			if err == nil {
				err = setMeta(p, s)
			}
			if err == nil {
				err = f.place(child, p, placed)
			}
		case syscall.S_IFREG:
			if q, ok := placed[child]; ok {
				err = syscall.Link(q, p)
				break
			}
			placed[child] = p
			if err = syscall.Rename(f.limboPath(child), p); errors.Is(err, syscall.ENOENT) {
				err = os.WriteFile(p, nil, 0o600)
			}
			if err == nil {
				err = setContent(p, s.data)
			}
			if err == nil {
				err = setMeta(p, s)
			}
		case syscall.S_IFLNK:
			if err = syscall.Symlink(s.target, p); err == nil {
				err = syscall.Lchown(p, int(s.uid), int(s.gid))
			}
		default:
			if err = syscall.Mknod(p, s.mode, 0); err == nil {
				err = setMeta(p, s)
			}
		}
		if err != nil {
			return fmt.Errorf("power cut: restore %s: %w", p, err)
		}
	}
	return nil
}

func setMeta(p string, s *state) error {
	if err := os.Lchown(p, int(s.uid), int(s.gid)); err != nil {
		return err
	}
	return syscall.Chmod(p, s.mode&0o7777)
}

func setContent(p string, data []byte) error {
	cur, err := os.ReadFile(p)
	if err == nil && bytes.Equal(cur, data) {
		return nil
	}
	fh, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		return err
	}
	if _, err := fh.Write(data); err != nil {
		fh.Close()
		return err
	}
	return fh.Close()
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// fingerprint names each path below root with its inode, mode, owner and,
// for all but directories, size and modification time.
func fingerprint(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[rel] = fmt.Sprintf("%d %o %d:%d", st.Ino, st.Mode, st.Uid, st.Gid)
		if !d.IsDir() { // a directory's size and time change when it is rebuilt
			out[rel] += fmt.Sprintf(" %d %d.%d", st.Size, st.Mtim.Sec, st.Mtim.Nsec)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("power cut: %w", err)
	}
	return out, nil
}
