package journal

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the record decoder: it never panics,
// what it accepts re-encodes to exactly the bytes before the tail, and a
// refusal is a *CorruptError inside the input. The seed corpus is in
// testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	f.Add(EncodeFrame([]byte("begin install")))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, tail, err := Decode(data)
		if err != nil {
			var ce *CorruptError
			if !errors.As(err, &ce) || !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not a *CorruptError", err)
			}
			if ce.Offset < 0 || ce.Offset >= int64(len(data)) {
				t.Fatalf("corruption offset %d outside %d bytes", ce.Offset, len(data))
			}
			return
		}
		end := int64(len(data))
		if tail != nil {
			if tail.Offset < 0 || tail.Offset >= end || tail.Offset+tail.Dropped != end || tail.Copy != "" {
				t.Fatalf("tail %+v for %d bytes", tail, len(data))
			}
			end = tail.Offset
		}
		var again []byte
		for _, r := range recs {
			if len(r) == 0 || len(r) > MaxRecordSize {
				t.Fatalf("record of %d bytes", len(r))
			}
			again = append(again, EncodeFrame(r)...)
		}
		if !bytes.Equal(again, data[:end]) {
			t.Fatal("records do not re-encode to the decoded bytes")
		}

		// Any payload round-trips through one frame.
		if len(data) > 0 && len(data) <= MaxRecordSize {
			recs, tail, err := Decode(EncodeFrame(data))
			if err != nil || tail != nil || len(recs) != 1 || !bytes.Equal(recs[0], data) {
				t.Fatalf("round trip: %q %v %v", recs, tail, err)
			}
		}
	})
}
