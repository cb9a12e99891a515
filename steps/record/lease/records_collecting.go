package lease

import "github.com/openagentcore/oac-node-install/journal/safefile"

// Collecting is the collection journal <g>.collecting (CONTRACT §3.2),
// written before any deletion. NativeComplete is set (and persisted) once
// native removal finished, before release files are removed.
type Collecting struct {
	Identity
	NativeComplete bool `json:"native_complete"`
}

func parseCollecting(path string, data []byte) (Collecting, error) {
	var c Collecting
	if err := decodeRecord(path, recordFormat, data, &c); err != nil {
		return Collecting{}, err
	}
	return c, nil
}

func marshalCollecting(c Collecting) ([]byte, error) {
	m := c.Identity.fields()
	m["native_complete"] = c.NativeComplete
	return marshalRecord(m)
}

// ReadCollecting reads generation g's collection journal from dir. A
// missing journal returns an error matching os.ErrNotExist.
func ReadCollecting(dir string, g int64, uid int) (Collecting, error) {
	var c Collecting
	err := withDir(dir, uid, func(d *safefile.Root) (err error) {
		c, err = readKind(d, uid, collectName(g), g, maxRecord, parseCollecting, func(c Collecting) Identity { return c.Identity })
		return err
	})
	return c, err
}

// WriteCollecting atomically writes (or rewrites) the collection journal.
func WriteCollecting(dir string, c Collecting, uid int) error {
	if err := c.Identity.Validate(); err != nil {
		return err
	}
	data, err := marshalCollecting(c)
	if err != nil {
		return err
	}
	return withDir(dir, uid, func(d *safefile.Root) error {
		return d.Write(collectName(c.Generation), data, 0o600, recordWrite(false))
	})
}
