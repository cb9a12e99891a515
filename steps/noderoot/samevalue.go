package noderoot

import (
	"fmt"
	"os"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// MaxRecordSize bounds every node-root JSON record compared by value (the
// largest, a generation's configuration, is at most provider.MaxSize).
const MaxRecordSize = 1 << 20

// recordValue compares node-root JSON records: the platform's programs write
// some of them on one line, the installer indents them; what counts is the
// value (CONTRACT §11).
var recordValue = strictjson.Format{MaxSize: MaxRecordSize}

// SameRecord reports whether got and want, two documents of a node-root JSON
// record, hold the same value in whatever layout. A document that is not
// strict JSON is never the same.
func SameRecord(got, want []byte) bool {
	ok, err := recordValue.Same(got, want)
	return err == nil && ok
}

// PublishRecord publishes the JSON record data at rel write-once: an
// existing record holding the same value, in any layout, is left as it is
// (made durable) and is success; another value is a *safefile.ConflictError
// and nothing is changed.
func PublishRecord(r *safefile.Root, rel string, data []byte, perm os.FileMode) error {
	if len(data) > MaxRecordSize {
		return fmt.Errorf("record %s: %d bytes, at most %d", rel, len(data), MaxRecordSize)
	}
	return r.PublishOnceSame(rel, data, perm, MaxRecordSize, func(got []byte) bool { return SameRecord(got, data) })
}
