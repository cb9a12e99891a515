package install

import "syscall"

type statT struct{ uid int }

func lstat(p string, st *statT) error {
	var s syscall.Stat_t
	if err := syscall.Lstat(p, &s); err != nil {
		return err
	}
	st.uid = int(s.Uid)
	return nil
}
