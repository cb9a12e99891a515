package release

import (
	"bytes"
	"reflect"
	"testing"
)

// The fuzz targets run their committed seeds (testdata/fuzz/<Name>/) in
// every go test run; go test -fuzz=<Name> explores further. Each checks that
// the parser never panics and that what it accepts survives a round trip
// through the matching writer unchanged.

func FuzzParseManifest(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseManifest(data)
		if err != nil {
			return
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("accepted manifest does not marshal: %v", err)
		}
		back, err := ParseManifest(out)
		if err != nil {
			t.Fatalf("marshalled manifest does not parse: %v\n%s", err, out)
		}
		m.Raw, back.Raw = nil, nil
		if !reflect.DeepEqual(m, back) {
			t.Fatalf("round trip changed the manifest")
		}
	})
}

func FuzzParseSHA256SUMS(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSHA256SUMS(data)
		if err != nil {
			return
		}
		out, err := s.Marshal()
		if err != nil {
			t.Fatalf("accepted sums do not marshal: %v", err)
		}
		back, err := ParseSHA256SUMS(out)
		if err != nil || !reflect.DeepEqual(s, back) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzParseSpecification(f *testing.F) {
	f.Fuzz(func(t *testing.T, provider string, data []byte) {
		s, err := ParseSpecification(provider, data)
		if err != nil {
			return
		}
		obj, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseSpecification(provider, obj)
		if err != nil {
			t.Fatalf("canonical object does not parse: %v\n%s", err, obj)
		}
		if !bytes.Equal(back.Canonical(), s.Canonical()) {
			t.Fatalf("canonical form changed:\n%s\n%s", s.Canonical(), back.Canonical())
		}
	})
}
