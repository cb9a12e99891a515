package lease

import (
	"errors"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// The dropped marker <g>.dropped holds only the marker identity (CONTRACT
// §3.2). It is written last, after file cleanup, and is write-once: a
// dropped generation can never be prepared or adopted again.

func parseDropped(path string, data []byte) (Identity, error) {
	var id Identity
	if err := decodeRecord(path, recordFormat, data, &id); err != nil {
		return Identity{}, err
	}
	return id, nil
}

// ReadDropped reads generation g's dropped marker from dir. A missing marker
// returns an error matching os.ErrNotExist.
func ReadDropped(dir string, g int64, uid int) (Identity, error) {
	var id Identity
	err := withDir(dir, uid, func(d *safefile.Root) (err error) {
		id, err = readKind(d, uid, droppedName(g), g, maxRecord, parseDropped, func(id Identity) Identity { return id })
		return err
	})
	return id, err
}

// WriteDropped publishes the dropped marker once. An existing marker with
// the same identity is success; another identity is a *safefile.ConflictError
// (errors.Is safefile.ErrConflict) and nothing is changed.
func WriteDropped(dir string, id Identity, uid int) error {
	if err := id.Validate(); err != nil {
		return err
	}
	data, err := marshalRecord(id.fields())
	if err != nil {
		return err
	}
	return withDir(dir, uid, func(d *safefile.Root) error {
		name := droppedName(id.Generation)
		err := d.Write(name, data, 0o600, recordWrite(true))
		if !errors.Is(err, os.ErrExist) {
			return err
		}
		got, rerr := readKind(d, uid, name, id.Generation, maxRecord, parseDropped, func(id Identity) Identity { return id })
		if rerr != nil {
			return rerr
		}
		if got != id {
			return &safefile.ConflictError{Path: d.Join(name)}
		}
		// Already there: an earlier run may have crashed before its
		// directory fsync, so make the marker durable before success.
		return d.Durable(name, private(uid, 0))
	})
}
