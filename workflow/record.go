package workflow

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// RecordType is the kind of a journal record. The names are persistence keys.
type RecordType string

const (
	RecordHeader RecordType = "header"
	RecordBegin  RecordType = "begin"
	RecordDone   RecordType = "done"
	RecordFail   RecordType = "fail"
	RecordEnd    RecordType = "end"
)

// Binding ties a journal to one workflow instance. A run resumes a journal
// only when every field equals the current binding.
type Binding struct {
	Workflow            string `json:"workflow"`
	Definition          string `json:"definition"`
	Version             string `json:"version"`
	InstallationID      string `json:"installation_id"`
	Generation          int64  `json:"generation,omitempty"`
	SpecificationDigest string `json:"specification_digest,omitempty"`
}

// differences lists, field by field, how b differs from want.
func (b Binding) differences(want Binding) []string {
	var d []string
	add := func(field string, got, want any) {
		if got != want {
			d = append(d, fmt.Sprintf("%s: journal has %v, this run has %v", field, got, want))
		}
	}
	add("workflow", b.Workflow, want.Workflow)
	add("definition hash", b.Definition, want.Definition)
	add("binary version", b.Version, want.Version)
	add("installation id", b.InstallationID, want.InstallationID)
	add("generation", b.Generation, want.Generation)
	add("specification digest", b.SpecificationDigest, want.SpecificationDigest)
	return d
}

// Record is one journal record. Which fields are set depends on Type.
type Record struct {
	Type RecordType `json:"type"`
	Time time.Time  `json:"time"`
	// Header records.
	Binding *Binding `json:"binding,omitempty"`
	// Begin, done and fail records.
	State   State  `json:"state,omitempty"`
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
	// Done records: the event fired, the state it led to, the step's output
	// facts, and whether the step's Verify (rather than Run) established it.
	Event    Event             `json:"event,omitempty"`
	To       State             `json:"to,omitempty"`
	Facts    map[string]string `json:"facts,omitempty"`
	Verified bool              `json:"verified,omitempty"`
	// Fail records: the error class and message, and whether the step
	// declared that it changed nothing before failing.
	Class     string `json:"class,omitempty"`
	Error     string `json:"error,omitempty"`
	Unchanged bool   `json:"unchanged,omitempty"`
}

func encodeRecord(r Record) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("encode %s record: %w", r.Type, err)
	}
	return b, nil
}

// recordFormat decodes journal records. A record is at most what the
// journal frames. Unknown keys are skipped, as the encoding/json decoder
// that read journals before did, so that no journal that replayed then is
// refused now; every record the engine writes (encodeRecord) has exactly
// the keys Record names, with "type", "time" and the binding's required
// keys always present, no null and no key twice.
var recordFormat = strictjson.Format{MaxSize: journal.MaxRecordSize, AllowUnknownKeys: true}

func decodeRecord(b []byte) (Record, error) {
	var r Record
	if err := recordFormat.Decode(b, &r); err != nil {
		return Record{}, fmt.Errorf("decode journal record: %w", err)
	}
	switch r.Type {
	case RecordHeader, RecordBegin, RecordDone, RecordFail, RecordEnd:
	default:
		return Record{}, fmt.Errorf("decode journal record: unknown type %q", r.Type)
	}
	return r, nil
}
