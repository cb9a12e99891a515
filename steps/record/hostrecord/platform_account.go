package hostrecord

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// PlatformAccountName is the platform's installer's account record in
// /etc/oac-node (CONTRACT §3.4, §11). This installer never writes it: it
// reads it to take a node of the platform's installer over, and removes
// it once its bookkeeping holds the record's facts.
const PlatformAccountName = "account.json"

// PlatformAccountPath is the host's account.json.
func PlatformAccountPath(h layout.Host) string {
	return filepath.Join(h.EtcDir(), PlatformAccountName)
}

// platformFormat decodes account.json: the keys the platform writes, and
// no others.
var platformFormat = strictjson.Format{MaxSize: MaxSize}

// PlatformAccount is /etc/oac-node/account.json as the platform's
// installer writes it: whether it created the oac-node account (useradd)
// or adopted an existing one, the account's uid, the supplementary groups
// it added, and for an adopted account the home's mode before it set 0700
// (an octal string, or null when there was no home).
type PlatformAccount struct {
	Created     bool     `json:"created"`
	Format      int      `json:"format"`
	GroupsAdded []string `json:"groups_added"`
	// HomeMode is nil (absent or null) or the octal string ("0o755"
	// as Python's oct() writes it; "0755" and "755" are read too).
	HomeMode any `json:"home_mode,omitempty"`
	UID      int `json:"uid"`
}

// Mode returns the adopted home's recorded mode; ok is false when none is
// recorded.
func (a PlatformAccount) Mode() (mode os.FileMode, ok bool, err error) {
	if a.HomeMode == nil {
		return 0, false, nil
	}
	s, isString := a.HomeMode.(string)
	if !isString {
		return 0, false, fmt.Errorf("home_mode is %v, not an octal string or null", a.HomeMode)
	}
	digits := strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O")
	n, perr := strconv.ParseUint(digits, 8, 32)
	if perr != nil || digits == "" || n > 0o7777 {
		return 0, false, fmt.Errorf("home_mode %q is not an octal file mode", s)
	}
	return os.FileMode(n&0o777) | unixModeBits(n), true, nil
}

// unixModeBits maps setuid, setgid and sticky from their octal bits to
// os.FileMode's.
func unixModeBits(n uint64) os.FileMode {
	var m os.FileMode
	if n&0o4000 != 0 {
		m |= os.ModeSetuid
	}
	if n&0o2000 != 0 {
		m |= os.ModeSetgid
	}
	if n&0o1000 != 0 {
		m |= os.ModeSticky
	}
	return m
}

// Marshal returns the record's bytes as the platform's installer writes
// them (indent 2, sorted keys, a trailing newline); tests lay out its
// hosts with it.
func (a PlatformAccount) Marshal() ([]byte, error) {
	m := map[string]any{"format": a.Format, "created": a.Created, "uid": a.UID, "groups_added": a.GroupsAdded}
	if a.GroupsAdded == nil {
		m["groups_added"] = []string{}
	}
	if !a.Created {
		m["home_mode"] = a.HomeMode
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// ReadPlatformAccount reads the host's account.json, root's. ok is false
// when there is none; a file not safe to read (a link, another owner than
// root, too large) is an error matching safefile.ErrUnsafe, one that does
// not decode or is not of format 1 an *InvalidError.
func ReadPlatformAccount(h layout.Host) (a PlatformAccount, ok bool, err error) {
	dir, err := safefile.OpenRoot(h.EtcDir())
	if errors.Is(err, os.ErrNotExist) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	defer dir.Close()
	data, err := dir.ReadFile(PlatformAccountName, safefile.Expect{UID: 0, MaxSize: MaxSize})
	if errors.Is(err, os.ErrNotExist) {
		return a, false, nil
	}
	if err != nil {
		return a, false, err
	}
	path := PlatformAccountPath(h)
	if err := platformFormat.Decode(data, &a); err != nil {
		return a, false, &InvalidError{Path: path, Err: err}
	}
	if a.Format != Version {
		return a, false, &InvalidError{Path: path, Err: fmt.Errorf("format %d, not %d", a.Format, Version)}
	}
	if _, _, err := a.Mode(); err != nil {
		return a, false, &InvalidError{Path: path, Err: err}
	}
	return a, true, nil
}
