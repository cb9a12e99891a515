package lease

import (
	"encoding/json"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// The record formats: exact keys (journal/strictjson), bounded like the
// reads that return them.
var (
	recordFormat    = strictjson.Format{MaxSize: maxRecord}
	preparingFormat = strictjson.Format{MaxSize: maxPreparingRecord}
	// A final configuration is the provider's format; only its head is
	// read here.
	finalHeadFormat = strictjson.Format{MaxSize: maxFinalConfig, AllowUnknownKeys: true}
)

// decodeRecord decodes data strictly into v; a refusal is ErrMalformed.
func decodeRecord(path string, f strictjson.Format, data []byte, v any) error {
	if err := f.Decode(data, v); err != nil {
		return refuse(path, "format", ErrMalformed, "%v", err)
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// marshalRecord renders a record the way the node's records are written:
// sorted keys, two-space indent, trailing newline.
func marshalRecord(v map[string]any) ([]byte, error) {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode record: %w", err)
	}
	return append(data, '\n'), nil
}

func (id Identity) fields() map[string]any {
	return map[string]any{
		"installation_id":      id.InstallationID,
		"generation":           id.Generation,
		"specification_digest": id.SpecificationDigest,
	}
}

// withDir opens the generations directory for one operation.
func withDir(dir string, uid int, fn func(*dirHandle) error) error {
	d, err := openDir(dir, uid)
	if err != nil {
		return err
	}
	defer d.close()
	return fn(d)
}

// readKind reads and parses one record and checks that it names the
// generation of its file name.
func readKind[T any](d *dirHandle, name string, g int64, limit int64, parse func(string, []byte) (T, error), identity func(T) Identity) (T, error) {
	var zero T
	path := d.join(name)
	data, _, err := d.readRecord(name, limit)
	if err != nil {
		return zero, err
	}
	v, err := parse(path, data)
	if err != nil {
		return zero, err
	}
	if got := identity(v).Generation; got != g {
		return zero, refuse(path, "identity", ErrIdentityMismatch, "record names generation %d", got)
	}
	return v, nil
}
