package strictjson

import (
	"errors"
	"testing"
)

func TestSame(t *testing.T) {
	f := Format{MaxSize: 1 << 10}
	indented := "{\n  \"a\": 1,\n  \"b\": [\n    \"x\",\n    true,\n    null\n  ],\n  \"c\": {\n    \"d\": \"é/\"\n  }\n}\n"
	for _, tc := range []struct {
		name string
		b    string
		want bool
	}{
		{"same bytes", indented, true},
		{"one line, other member order, escapes", `{"c":{"d":"\u00e9\/"},"b":["x",true,null],"a":1}`, true},
		{"number written otherwise", `{"a":1.0e0,"b":["x",true,null],"c":{"d":"é/"}}`, true},
		{"other number", `{"a":2,"b":["x",true,null],"c":{"d":"é/"}}`, false},
		{"other string", `{"a":1,"b":["y",true,null],"c":{"d":"é/"}}`, false},
		{"array order", `{"a":1,"b":[true,"x",null],"c":{"d":"é/"}}`, false},
		{"member missing", `{"a":1,"b":["x",true,null]}`, false},
		{"member added", `{"a":1,"b":["x",true,null],"c":{"d":"é/"},"e":0}`, false},
		{"null for a value", `{"a":null,"b":["x",true,null],"c":{"d":"é/"}}`, false},
		{"string for a number", `{"a":"1","b":["x",true,null],"c":{"d":"é/"}}`, false},
		{"huge exponent", `{"a":1e99999,"b":["x",true,null],"c":{"d":"é/"}}`, false},
	} {
		got, err := f.Same([]byte(indented), []byte(tc.b))
		if err != nil || got != tc.want {
			t.Errorf("%s: Same = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{`{"a":1,"a":1}`, "{\"a\":\"\xff\"}", `{"a":1} {}`, `{"a":`} {
		if ok, err := f.Same([]byte(`{"a":1}`), []byte(bad)); ok || !errors.Is(err, ErrInvalid) {
			t.Errorf("Same(%q) = %v, %v; want ErrInvalid", bad, ok, err)
		}
	}
	if ok, err := (Format{MaxSize: 8}).Same([]byte(`{"a":1}`), []byte(`{ "a" : 1 }`)); ok || !errors.Is(err, ErrTooLarge) {
		t.Errorf("too large: %v, %v", ok, err)
	}
}
