package lease

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

// Identity is the marker identity every generation record carries: the
// installation, the generation number and the specification digest.
type Identity struct {
	InstallationID      ident.InstallationID `json:"installation_id"`
	Generation          int64                `json:"generation"`
	SpecificationDigest string               `json:"specification_digest"`
}

// ErrInvalidIdentity: an identity field is malformed (installation id not a
// canonical UUID, generation not in 1..2^63-1, digest not 64 lowercase hex).
var ErrInvalidIdentity = errors.New("invalid generation identity")

// Validate checks the identity's fields.
func (id Identity) Validate() error {
	if !id.InstallationID.Valid() {
		return fmt.Errorf("%w: installation id %q is not a canonical UUID", ErrInvalidIdentity, truncate(string(id.InstallationID)))
	}
	if id.Generation < 1 {
		return fmt.Errorf("%w: generation %d is not positive", ErrInvalidIdentity, id.Generation)
	}
	if !ident.LowerHex(id.SpecificationDigest, 64) {
		return fmt.Errorf("%w: specification digest is not 64 lowercase hex digits", ErrInvalidIdentity)
	}
	return nil
}

func (id Identity) String() string {
	return fmt.Sprintf("installation %s generation %d specification %s", id.InstallationID, id.Generation, id.SpecificationDigest)
}

// LeaseIdentity is the <g>.lease-identity record: the marker identity bound
// to the lease file's device and inode (CONTRACT §3.2).
type LeaseIdentity struct {
	Identity
	Device uint64 `json:"device"`
	Inode  uint64 `json:"inode"`
}

// Record file names of generation g.
func leaseName(g int64) string     { return strconv.FormatInt(g, 10) + ".lease" }
func identityName(g int64) string  { return strconv.FormatInt(g, 10) + ".lease-identity" }
func finalName(g int64) string     { return strconv.FormatInt(g, 10) + ".json" }
func preparingName(g int64) string { return strconv.FormatInt(g, 10) + ".preparing" }
func collectName(g int64) string   { return strconv.FormatInt(g, 10) + ".collecting" }
func droppedName(g int64) string   { return strconv.FormatInt(g, 10) + ".dropped" }

// parseLeaseIdentity parses a lease identity record with its exact key set.
func parseLeaseIdentity(path string, data []byte) (LeaseIdentity, error) {
	var r LeaseIdentity
	if err := decodeRecord(path, recordFormat, data, &r); err != nil {
		return LeaseIdentity{}, err
	}
	return r, nil
}

// marshalLeaseIdentity renders the record.
func marshalLeaseIdentity(r LeaseIdentity) ([]byte, error) {
	m := r.Identity.fields()
	m["device"] = r.Device
	m["inode"] = r.Inode
	return marshalRecord(m)
}

// readLeaseIdentity reads <g>.lease-identity safely. A missing record
// returns ErrIdentityMissing.
func readLeaseIdentity(d *safefile.Root, uid int, g int64) (LeaseIdentity, error) {
	name := identityName(g)
	data, err := d.ReadFile(name, private(uid, maxRecord))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return LeaseIdentity{}, refuse(d.Join(name), "identity", ErrIdentityMissing, "lease %s has no identity record", d.Join(leaseName(g)))
		}
		return LeaseIdentity{}, err
	}
	return parseLeaseIdentity(d.Join(name), data)
}
