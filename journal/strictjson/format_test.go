package strictjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

type inner struct {
	Name string `json:"name"`
	Port uint16 `json:"port,omitempty"`
}

type ident struct {
	ID         string `json:"id"`
	Generation int64  `json:"generation"`
}

type record struct {
	ident
	SourceURL string            `json:"source_url"`
	Count     int8              `json:"count,omitempty"`
	Ratio     float64           `json:"ratio,omitempty"`
	Enabled   bool              `json:"enabled,omitempty"`
	Tags      []string          `json:"tags,omitempty"`
	Sums      map[string]string `json:"sums,omitempty"`
	Inner     *inner            `json:"inner,omitempty"`
	Pair      [2]int            `json:"pair,omitzero"`
	Extra     json.RawMessage   `json:"extra,omitempty"`
	Any       any               `json:"any,omitempty"`
	hidden    string
	Skipped   string `json:"-"`
}

var strict = strictjson.Format{MaxSize: 4096}

// base is a minimal valid record; cases add members to it.
func doc(members string) string {
	if members == "" {
		return `{"id":"a","generation":1,"source_url":"https://a.example"}`
	}
	return `{"id":"a","generation":1,"source_url":"https://a.example",` + members + `}`
}

func TestDecodeRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, doc, path string
		format          strictjson.Format
	}{
		{"case variant with the exact key", `{"SOURCE_URL":"https://a.example","source_url":"https://b.example","id":"a","generation":1}`, "SOURCE_URL", strict},
		{"case variant alone", `{"Source_Url":"https://a.example","id":"a","generation":1}`, "Source_Url", strict},
		{"case variant when unknown keys are allowed", `{"SOURCE_URL":"https://a.example","source_url":"https://b.example","id":"a","generation":1}`, "SOURCE_URL", strictjson.Format{MaxSize: 4096, AllowUnknownKeys: true}},
		{"long s folds to s as in encoding/json", `{"id":"a","generation":1,"ſource_url":"x"}`, `"ſource_url"`, strictjson.Format{MaxSize: 4096, AllowUnknownKeys: true}},
		{"duplicate top-level key", doc(`"source_url":"https://b.example"`), "source_url", strict},
		{"duplicate key spelled with an escape", doc(`"source\u005furl":"https://b.example"`), "source_url", strict},
		{"duplicate key in a nested struct", doc(`"inner":{"name":"x","name":"y"}`), "inner.name", strict},
		{"duplicate key in a map", doc(`"sums":{"a/b.json":"1","a/b.json":"2"}`), `sums.a/b.json`, strict},
		{"duplicate key in a raw value", doc(`"extra":{"x":[{"k":1,"k":2}]}`), "extra.x[0].k", strict},
		{"duplicate key in an ignored value", doc(`"later":{"k":1,"k":2}`), "later.k", strictjson.Format{MaxSize: 4096, AllowUnknownKeys: true}},
		{"unknown key", doc(`"later":1`), "later", strict},
		{"unknown nested key", doc(`"inner":{"name":"x","other":1}`), "inner.other", strict},
		{"missing required key", `{"id":"a","source_url":"https://a.example"}`, "generation", strict},
		{"missing required nested key", doc(`"inner":{}`), "inner.name", strict},
		{"integer with a fraction", `{"id":"a","generation":1.0,"source_url":"x"}`, "generation", strict},
		{"integer with an exponent", `{"id":"a","generation":1e3,"source_url":"x"}`, "generation", strict},
		{"negative zero", `{"id":"a","generation":-0,"source_url":"x"}`, "generation", strict},
		{"integer as a string", `{"id":"a","generation":"1","source_url":"x"}`, "generation", strict},
		{"integer as a boolean", `{"id":"a","generation":true,"source_url":"x"}`, "generation", strict},
		{"integer beyond int64", `{"id":"a","generation":9223372036854775808,"source_url":"x"}`, "generation", strict},
		{"integer beyond int8", doc(`"count":128`), "count", strict},
		{"negative into unsigned", doc(`"inner":{"name":"x","port":-1}`), "inner.port", strict},
		{"integer beyond uint16", doc(`"inner":{"name":"x","port":65536}`), "inner.port", strict},
		{"float overflow", doc(`"ratio":1e400`), "ratio", strict},
		{"leading zero", `{"id":"a","generation":01,"source_url":"x"}`, "", strict},
		{"string as a number", `{"id":1,"generation":1,"source_url":"x"}`, "id", strict},
		{"boolean as a string", doc(`"enabled":"true"`), "enabled", strict},
		{"null string", `{"id":null,"generation":1,"source_url":"x"}`, "id", strict},
		{"null slice", doc(`"tags":null`), "tags", strict},
		{"null raw value", doc(`"extra":null`), "extra", strict},
		{"null pointer", doc(`"inner":null`), "inner", strict},
		{"array of the wrong length", doc(`"pair":[1,2,3]`), "pair", strict},
		{"array where an object belongs", doc(`"inner":[]`), "inner", strict},
		{"trailing data", doc("") + ` {}`, "", strict},
		{"trailing garbage", doc("") + `x`, "", strict},
		{"two documents", doc("") + "\n" + doc(""), "", strict},
		{"empty document", ``, "", strict},
		{"only white space", "  \n", "", strict},
		{"invalid UTF-8 in a string", `{"id":"a` + "\xff" + `","generation":1,"source_url":"x"}`, "", strict},
		{"invalid UTF-8 in a key", doc(`"` + "\xc3" + `":1`), "", strictjson.Format{MaxSize: 4096, AllowUnknownKeys: true}},
		{"control character in a string", "{\"id\":\"a\tb\",\"generation\":1,\"source_url\":\"x\"}", "", strict},
		{"bad escape", `{"id":"a\x","generation":1,"source_url":"x"}`, "", strict},
		{"trailing comma", `{"id":"a","generation":1,"source_url":"x",}`, "", strict},
		{"single quotes", `{'id':"a"}`, "", strict},
		{"too large", doc(`"tags":["` + strings.Repeat("a", 5000) + `"]`), "", strict},
		{"not an object", `[]`, "", strict},
		{"nested too deep", doc(`"any":` + strings.Repeat("[", 600) + strings.Repeat("]", 600)), "", strictjson.Format{MaxSize: 4096}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r record
			r.ID = "untouched"
			err := tc.format.Decode([]byte(tc.doc), &r)
			if !errors.Is(err, strictjson.ErrInvalid) {
				t.Fatalf("Decode = %v, want ErrInvalid", err)
			}
			var se *strictjson.Error
			if !errors.As(err, &se) {
				t.Fatalf("Decode = %T, want *Error", err)
			}
			if tc.path != "" && se.Path != tc.path {
				t.Errorf("path = %q, want %q (%v)", se.Path, tc.path, err)
			}
			if r.ID != "untouched" {
				t.Errorf("a refused document changed the target: %+v", r)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	for _, tc := range []struct {
		name   string
		doc    string
		format strictjson.Format
		want   record
	}{
		{"required keys only", doc(""), strict, record{ident: ident{"a", 1}, SourceURL: "https://a.example"}},
		{"every field", doc(`"count":-128,"ratio":1.5e2,"enabled":false,"tags":[],"sums":{"K":"1","k":"2"},"inner":{"name":"n","port":65535},"pair":[0,-1],"extra": { "x" : [1, 2] },"any":{"a":[1,"b",null,true]}`), strict,
			record{ident: ident{"a", 1}, SourceURL: "https://a.example", Count: -128, Ratio: 150, Tags: []string{}, Sums: map[string]string{"K": "1", "k": "2"},
				Inner: &inner{"n", 65535}, Pair: [2]int{0, -1}, Extra: json.RawMessage(`{ "x" : [1, 2] }`), Any: map[string]any{"a": []any{1.0, "b", nil, true}}}},
		{"escaped key", `{"i\u0064":"a","generation":1,"source_url":"\u00e9"}`, strict, record{ident: ident{"a", 1}, SourceURL: "é"}},
		{"white space around the value", " \t\n" + doc("") + "\r\n", strict, record{ident: ident{"a", 1}, SourceURL: "https://a.example"}},
		{"unknown keys when allowed", doc(`"later":{"K":[1.5]},"more":null`), strictjson.Format{MaxSize: 4096, AllowUnknownKeys: true}, record{ident: ident{"a", 1}, SourceURL: "https://a.example"}},
		{"largest int64", `{"id":"a","generation":9223372036854775807,"source_url":""}`, strict, record{ident: ident{"a", 9223372036854775807}}},
		{"exactly the size bound", doc(""), strictjson.Format{MaxSize: len(doc(""))}, record{ident: ident{"a", 1}, SourceURL: "https://a.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r record
			if err := tc.format.Decode([]byte(tc.doc), &r); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(r, tc.want) {
				t.Errorf("got %+v\nwant %+v", r, tc.want)
			}
		})
	}
}

// The defect that made this package: encoding/json returns the second of
// two keys that differ only in case.
func TestCaseVariantsAreNotTheSameKey(t *testing.T) {
	data := []byte(`{"SOURCE_URL":"https://a.example","source_url":"https://b.example"}`)
	var lenient struct {
		SourceURL string `json:"source_url"`
	}
	if err := json.Unmarshal(data, &lenient); err != nil || lenient.SourceURL != "https://b.example" {
		t.Fatalf("encoding/json no longer shows the defect: %v %q", err, lenient.SourceURL)
	}
	strictTarget := lenient
	err := strictjson.Format{MaxSize: 100}.Decode(data, &strictTarget)
	if !errors.Is(err, strictjson.ErrInvalid) {
		t.Fatalf("Decode = %v, want ErrInvalid", err)
	}
}

func TestTooLargeMatchesErrTooLarge(t *testing.T) {
	var v any
	err := strictjson.Format{MaxSize: 3}.Decode([]byte(`"abc"`), &v)
	if !errors.Is(err, strictjson.ErrTooLarge) || !errors.Is(err, strictjson.ErrInvalid) {
		t.Fatalf("Decode = %v, want ErrTooLarge and ErrInvalid", err)
	}
	err = strictjson.Format{MaxSize: 3}.Read(strings.NewReader(`"abc"`), &v)
	if !errors.Is(err, strictjson.ErrTooLarge) {
		t.Fatalf("Read = %v, want ErrTooLarge", err)
	}
	if err := (strictjson.Format{MaxSize: 5}).Read(strings.NewReader(`"abc"`), &v); err != nil || v != "abc" {
		t.Fatalf("Read = %v, %v", err, v)
	}
}

func TestErrorsNeverQuoteValues(t *testing.T) {
	const secret = "0123456789abcdef0123456789abcdef"
	for _, d := range []string{
		`{"id":"` + secret + `","id":"x"}`,
		`{"id":1,"generation":"` + secret + `","source_url":"x"}`,
		`{"id":"` + secret + `","generation":1.5,"source_url":"x"}`,
		`{"id":"` + secret + "\x01" + `"}`,
	} {
		var r record
		err := strict.Decode([]byte(d), &r)
		if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), secret[:8]) {
			t.Errorf("Decode(%s) = %v", d, err)
		}
	}
}

func TestLongKeysAreShortenedInErrors(t *testing.T) {
	key := strings.Repeat("k", 1000)
	var r record
	err := strict.Decode([]byte(doc(`"`+key+`":1`)), &r)
	if err == nil || len(err.Error()) > 200 {
		t.Fatalf("Decode = %v", err)
	}
}

func TestProgrammingErrors(t *testing.T) {
	var twoNames struct {
		ident
		Other string `json:"id"`
	}
	var quoted struct {
		N int `json:"n,string"`
	}
	for name, tc := range map[string]struct {
		f strictjson.Format
		v any
	}{
		"not a pointer":       {strict, record{}},
		"no size bound":       {strictjson.Format{}, &record{}},
		"two fields one name": {strict, &twoNames},
		"string option":       {strict, &quoted},
	} {
		t.Run(name, func(t *testing.T) {
			err := tc.f.Decode([]byte(`{"x":"1","n":"1"}`), tc.v)
			if err == nil || errors.Is(err, strictjson.ErrInvalid) {
				t.Fatalf("Decode = %v, want a programming error", err)
			}
		})
	}
}

type upper string

func (u *upper) UnmarshalText(b []byte) error {
	if bytes.ContainsAny(b, "abcdefghijklmnopqrstuvwxyz") {
		return errors.New("lower case")
	}
	*u = upper(b)
	return nil
}

func TestTextUnmarshaler(t *testing.T) {
	var v struct {
		U upper `json:"u"`
	}
	if err := strict.Decode([]byte(`{"u":"AB"}`), &v); err != nil || v.U != "AB" {
		t.Fatalf("Decode = %v, %q", err, v.U)
	}
	if err := strict.Decode([]byte(`{"u":"ab"}`), &v); !errors.Is(err, strictjson.ErrInvalid) {
		t.Fatalf("Decode = %v, want ErrInvalid", err)
	}
}
