package strictjson_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// fuzzTarget holds a field of every kind the decoder handles.
type fuzzTarget struct {
	ident
	S  string            `json:"s"`
	I  int32             `json:"i,omitempty"`
	U  uint8             `json:"u,omitempty"`
	F  float64           `json:"f,omitempty"`
	B  bool              `json:"b,omitempty"`
	L  []int64           `json:"l,omitempty"`
	M  map[string]uint64 `json:"m,omitempty"`
	P  *inner            `json:"p,omitempty"`
	A  [2]string         `json:"a,omitzero"`
	R  json.RawMessage   `json:"r,omitempty"`
	X  any               `json:"x,omitempty"`
	PP **int16           `json:"pp,omitempty"`
}

// FuzzDecode checks, for every document the strict decoder accepts, that
// encoding/json accepts it too and reads the same value, and that the
// value re-encodes to a document the strict decoder reads back to the same
// value. The seed corpus is in testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, allowUnknown bool) {
		format := strictjson.Format{MaxSize: 1 << 16, AllowUnknownKeys: allowUnknown}

		var got fuzzTarget
		if err := format.Decode(data, &got); err == nil {
			var lenient fuzzTarget
			if err := json.Unmarshal(data, &lenient); err != nil {
				t.Fatalf("strict decoder accepted what encoding/json rejects (%v): %q", err, data)
			}
			if !reflect.DeepEqual(got, lenient) {
				t.Fatalf("strict and encoding/json disagree on %q:\n%#v\n%#v", data, got, lenient)
			}
			roundTrip(t, got)
		}

		var generic any
		if err := format.Decode(data, &generic); err == nil {
			var lenient any
			if err := json.Unmarshal(data, &lenient); err != nil {
				t.Fatalf("strict decoder accepted what encoding/json rejects (%v): %q", err, data)
			}
			if !reflect.DeepEqual(generic, lenient) {
				t.Fatalf("strict and encoding/json disagree on %q:\n%#v\n%#v", data, generic, lenient)
			}
			roundTrip(t, generic)
		}
	})
}

// roundTrip encodes v, decodes the encoding strictly into a new value of
// v's type, and checks that it encodes to the same bytes.
func roundTrip[T any](t *testing.T, v T) {
	t.Helper()
	enc, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encode accepted value %#v: %v", v, err)
	}
	var again T
	if err := (strictjson.Format{MaxSize: 1 << 20}).Decode(enc, &again); err != nil {
		t.Fatalf("strict decoder refuses the encoding of a value it accepted: %v\n%s", err, enc)
	}
	enc2, err := json.Marshal(again)
	if err != nil || !bytes.Equal(enc, enc2) {
		t.Fatalf("re-decoded value differs:\n%s\n%s", enc, enc2)
	}
}
