package workflow

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// Every record the engine writes decodes through strictjson exactly as
// encoding/json, the journal's decoder before, decoded it: the records of
// every kind, and the committed journal the engine wrote.
func TestRecordsDecodeAsEncodingJSONDid(t *testing.T) {
	at := time.Date(2026, 11, 30, 9, 14, 25, 409559613, time.UTC)
	recs := map[string]Record{
		"header": {Type: RecordHeader, Time: at, Binding: &Binding{Workflow: "install", Definition: "c444", Version: "v1", InstallationID: "id-1"}},
		"header of a generation": {Type: RecordHeader, Time: at, Binding: &Binding{Workflow: "prepare", Definition: "c444", Version: "v1",
			InstallationID: "id-1", Generation: 3, SpecificationDigest: "sha256:ab"}},
		"zero time": {Type: RecordHeader, Binding: &Binding{}},
		"begin":     {Type: RecordBegin, Time: at, State: "first", Step: "first", Attempt: 2},
		"done":      {Type: RecordDone, Time: at, State: "first", Step: "first", Event: "first_done", To: "second", Facts: map[string]string{"a": "1", "b": ""}, Verified: true},
		"fail": {Type: RecordFail, Time: at, State: "second", Step: "second", Class: "transfer",
			Error: "Core said \"no\"\n\t\x00 ü \xff\xfe <&>", Unchanged: true},
		"end": {Type: RecordEnd, Time: at, State: "finished"},
	}
	var raws [][]byte
	for name, r := range recs {
		b, err := encodeRecord(r)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		raws = append(raws, b)
	}
	golden, _, err := journal.Scan(filepath.Join("testdata", "interrupted-verify.journal"))
	if err != nil || len(golden) == 0 {
		t.Fatalf("the committed journal: %d records, %v", len(golden), err)
	}
	raws = append(raws, golden...)
	for _, b := range raws {
		var want Record
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("encoding/json: %s: %v", b, err)
		}
		got, err := decodeRecord(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", b, got, want)
		}
	}
}

// A key the record does not name is skipped, as encoding/json skipped it;
// what strictjson refuses (a key twice, null) is an error naming the
// record, never a different record.
func TestDecodeRecordKeys(t *testing.T) {
	r, err := decodeRecord([]byte(`{"type":"begin","time":"2026-11-30T09:14:25Z","state":"a","step":"a","attempt":1,"later":{"x":[1]}}`))
	if err != nil || r.Type != RecordBegin || r.State != "a" || r.Attempt != 1 {
		t.Fatalf("unknown key: %+v %v", r, err)
	}
	for name, b := range map[string]string{
		"a key twice":  `{"type":"begin","time":"2026-11-30T09:14:25Z","state":"a","state":"b"}`,
		"null":         `{"type":"begin","time":"2026-11-30T09:14:25Z","state":null}`,
		"unknown type": `{"type":"later","time":"2026-11-30T09:14:25Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := decodeRecord([]byte(b)); err == nil {
				t.Fatal("decoded")
			} else if name != "unknown type" && !errors.Is(err, strictjson.ErrInvalid) {
				t.Fatalf("error %v does not match strictjson.ErrInvalid", err)
			}
		})
	}
}
