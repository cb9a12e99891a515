package hostrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Version is the record's format number, its "format" key.
const Version = 1

// MaxSize bounds a host record in bytes.
const MaxSize = 1 << 16

// format decodes a host record. Unknown keys are skipped, as every reader
// skipped them before the strict decoder: an operator's note added to the
// record is no reason to refuse it, and install rewrites the record whole.
var format = strictjson.Format{MaxSize: MaxSize, AllowUnknownKeys: true}

// Record is /etc/oac-node/<id>.json. The fields are in the order of their
// keys, which is the order json.MarshalIndent wrote the record in when it
// was a map: the bytes stay those of every earlier version.
type Record struct {
	// AllowInsecureOrigin is set only when the node was installed with
	// --allow-insecure-origin.
	AllowInsecureOrigin bool `json:"allow_insecure_origin,omitempty"`
	// CoreCA is the node root's copy of --core-ca; CoreCASHA256 is the
	// hex SHA-256 of its bytes. Both empty without --core-ca.
	CoreCA       string `json:"core_ca,omitempty"`
	CoreCASHA256 string `json:"core_ca_sha256,omitempty"`
	CoreURL      string `json:"core_url"`
	// Format is Version.
	Format int `json:"format"`
	// InstallationID is decoded as it is (ident.InstallationID): Read
	// finds the record by the id's name and the caller compares the two.
	InstallationID ident.InstallationID `json:"installation_id"`
	// NodeRoot and Unit are always written (layout's paths are never
	// empty); a reader needs neither, so a record without them is read.
	NodeRoot string `json:"node_root,omitempty"`
	Provider string `json:"provider"`
	Unit     string `json:"unit,omitempty"`
}

// ErrInvalid: a host record is not one this installer writes (not JSON, a
// duplicate or missing key, a key in another case, a value of another
// type or null, another format). Errors matching it
// are *InvalidError values.
var ErrInvalid = errors.New("invalid host record")

// InvalidError is a refused host record: its path and why.
type InvalidError struct {
	Path string
	Err  error
}

func (e *InvalidError) Error() string {
	return fmt.Sprintf("the host record %s is not valid JSON of format %d: %v", e.Path, Version, e.Err)
}

// Unwrap makes the error match ErrInvalid and the decoder's error.
func (e *InvalidError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// Marshal returns the record's bytes as Write writes them.
func (r Record) Marshal() ([]byte, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Write replaces the host's record of r.InstallationID atomically and
// durably (safefile.AtomicWrite), mode 0644. The caller is root, holds the
// host lock and has already recorded the installation in the bookkeeping.
func Write(h layout.Host, r Record) error {
	data, err := r.Marshal()
	if err != nil {
		return err
	}
	return safefile.AtomicWrite(h.Record(r.InstallationID), data, 0o644)
}

// Read reads the host's record of installation id. A missing record (or a
// missing /etc/oac-node) is an error matching fs.ErrNotExist; a file that
// is not safe to read (a symbolic link, another owner than root, more than
// MaxSize bytes, not a regular file) one matching safefile.ErrUnsafe; a
// record that does not decode an *InvalidError. The caller compares
// InstallationID with id where it matters.
func Read(h layout.Host, id ident.InstallationID) (Record, error) {
	dir, err := safefile.OpenRoot(h.EtcDir())
	if err != nil {
		return Record{}, err
	}
	defer dir.Close()
	data, err := dir.ReadFile(layout.RecordName(id), safefile.Expect{UID: 0, MaxSize: MaxSize})
	if err != nil {
		return Record{}, err
	}
	return Decode(h.Record(id), data)
}

// Decode decodes data, the record at path, by the strict rules.
func Decode(path string, data []byte) (Record, error) {
	var r Record
	if err := format.Decode(data, &r); err != nil {
		return Record{}, &InvalidError{Path: path, Err: err}
	}
	if r.Format != Version {
		return Record{}, &InvalidError{Path: path, Err: fmt.Errorf("format %d, not %d", r.Format, Version)}
	}
	return r, nil
}

// Missing says that the installer's bookkeeping records installation id
// while its host record is gone, and what to do: the two records disagree
// and neither is taken for the truth. The install (a rerun refuses with it)
// and status (which shows the installation as needing attention) say the
// same.
func Missing(h layout.Host, id ident.InstallationID) string {
	return fmt.Sprintf("the installer's bookkeeping %s records installation %s, but its host record %s is missing; restore the record from a backup of /etc, or remove the node in Web and run `sudo oac-node-install --uninstall --installation-id %s --force`",
		h.Bookkeeping(), id, h.Record(id), id)
}

// CoreCACopy is root's copy of the installation's --core-ca file, beside
// its host record (0644, root's, in root's /etc/oac-node): a rerun reads
// the Core CA from it, never from the node root's copy, which the service
// account can write.
func CoreCACopy(h layout.Host, id ident.InstallationID) string {
	return filepath.Join(h.EtcDir(), string(id)+".core-ca.pem")
}
