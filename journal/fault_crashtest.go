//go:build crashtest

package journal

import "sync"

// Tests built with -tags crashtest make a journal's appends fail as a full
// disk does: the record is written, and its sync fails (fdatasync returning
// ENOSPC), so the record may or may not be on the disk after the failure.
var faults struct {
	sync.Mutex
	byPath map[string]func(payload []byte) error
}

// FailAppends makes every append to the journal at path whose payload f
// returns an error for fail with that error, after the write, before the
// sync; nil f ends it.
func FailAppends(path string, f func(payload []byte) error) {
	faults.Lock()
	defer faults.Unlock()
	if faults.byPath == nil {
		faults.byPath = map[string]func([]byte) error{}
	}
	if f == nil {
		delete(faults.byPath, path)
		return
	}
	faults.byPath[path] = f
}

func appendFault(path string, payload []byte) error {
	faults.Lock()
	f := faults.byPath[path]
	faults.Unlock()
	if f == nil {
		return nil
	}
	return f(payload)
}
