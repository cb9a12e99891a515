package lease

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
)

// Preparing is the preparation plan <g>.preparing (CONTRACT §3.2). It is
// written with ImportStarted false before any download, rewritten with
// ImportStarted true right before the image import runs, and removed only
// after <g>.json is durably published. A plan never serves as a provider.
type Preparing struct {
	Identity
	ImportStarted bool `json:"import_started"`
	// Configuration is the full planned provider configuration (a JSON
	// object), or nil when the plan carries none.
	Configuration json.RawMessage `json:"configuration,omitempty"`
}

func parsePreparing(path string, data []byte) (Preparing, error) {
	var p Preparing
	if err := decodeRecord(path, preparingFormat, data, &p); err != nil {
		return Preparing{}, err
	}
	if p.Configuration != nil && p.Configuration[0] != '{' {
		return Preparing{}, refuse(path, "format", ErrMalformed, "configuration: not an object")
	}
	return p, nil
}

func marshalPreparing(p Preparing) ([]byte, error) {
	m := p.Identity.fields()
	m["import_started"] = p.ImportStarted
	if p.Configuration != nil {
		if !json.Valid(p.Configuration) || p.Configuration[0] != '{' {
			return nil, fmt.Errorf("encode preparation plan: configuration is not a JSON object")
		}
		m["configuration"] = p.Configuration
	}
	data, err := marshalRecord(m)
	if err == nil && len(data) > maxPreparingRecord {
		return nil, fmt.Errorf("encode preparation plan: %d bytes, at most %d", len(data), maxPreparingRecord)
	}
	return data, err
}

// ReadPreparing reads generation g's plan from dir with every record check.
// A missing plan returns an error matching os.ErrNotExist.
func ReadPreparing(dir string, g int64, uid int) (Preparing, error) {
	var p Preparing
	err := withDir(dir, uid, func(d *safefile.Root) (err error) {
		p, err = readKind(d, uid, preparingName(g), g, maxPreparingRecord, parsePreparing, func(p Preparing) Identity { return p.Identity })
		return err
	})
	return p, err
}

// WritePreparing atomically writes (or rewrites) the plan. A generation with
// a dropped marker refuses (ErrDropped): it can never be prepared again.
func WritePreparing(dir string, p Preparing, uid int) error {
	if err := p.Identity.Validate(); err != nil {
		return err
	}
	data, err := marshalPreparing(p)
	if err != nil {
		return err
	}
	return withDir(dir, uid, func(d *safefile.Root) error {
		if ok, err := d.Exists(droppedName(p.Generation)); err != nil {
			return err
		} else if ok {
			return refuse(d.Join(droppedName(p.Generation)), "records", ErrDropped, "the generation can never be prepared again")
		}
		return d.Write(preparingName(p.Generation), data, 0o600, recordWrite(false))
	})
}

// RemovePreparing removes generation g's plan and fsyncs the directory. Call
// it only after the final configuration is durably published. A missing
// plan is success (the directory is fsynced all the same: an earlier
// removal may not be durable yet).
func RemovePreparing(dir string, g int64, uid int) error {
	return withDir(dir, uid, func(d *safefile.Root) error {
		if err := d.Remove(preparingName(g)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	})
}
