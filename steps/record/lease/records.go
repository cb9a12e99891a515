package lease

import (
	"encoding/json"
	"fmt"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// Size limits of the records (CONTRACT §3.2).
const (
	maxRecord          = 4096
	maxPreparingRecord = 16384
	maxFinalConfig     = 1 << 20
)

// recordTemp prefixes the temporary file of every record write
// (.generation-<name>), which inspection knows.
const recordTemp = ".generation-"

// openDir opens the generations directory dir through the safe-file layer,
// without following a symbolic link, and requires a directory owned by uid
// that neither group nor others can write. Every file in it is resolved
// beneath the returned root, so a renamed or replaced parent path cannot
// redirect later opens.
func openDir(dir string, uid int) (*safefile.Root, error) {
	parent, err := safefile.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("open generations directory: %w", err)
	}
	defer parent.Close()
	root, err := parent.OpenDir(".", safefile.Expect{UID: uid, DenyMode: 0o022})
	if err != nil {
		return nil, fmt.Errorf("open generations directory: %w", err)
	}
	return root, nil
}

// private is what every record and lease must be: a regular file with one
// link, owned by the node account uid, mode 0600, at most limit bytes (0:
// any size). Reads with it have every check of CONTRACT §3.2: opened
// without links and without blocking and, after reading, the path still
// names the inode that was read.
func private(uid int, limit int64) safefile.Expect {
	return safefile.Expect{UID: uid, Mode: 0o600, MaxSize: limit}
}

// recordWrite is how a record is published: atomically through a private
// temporary .generation-<name> file (writers of one record hold the
// installation lock), replacing the record or, with noReplace, linking it
// in only if it is absent (an existing one returns an error matching
// os.ErrExist and changes nothing); the file and the directory are fsynced.
func recordWrite(noReplace bool) safefile.WriteOptions {
	return safefile.WriteOptions{Temp: recordTemp, Point: "record-before-rename", NoReplace: noReplace}
}

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
func withDir(dir string, uid int, fn func(*safefile.Root) error) error {
	d, err := openDir(dir, uid)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(d)
}

// readKind reads and parses one record and checks that it names the
// generation of its file name.
func readKind[T any](d *safefile.Root, uid int, name string, g int64, limit int64, parse func(string, []byte) (T, error), identity func(T) Identity) (T, error) {
	var zero T
	path := d.Join(name)
	data, err := d.ReadFile(name, private(uid, limit))
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
