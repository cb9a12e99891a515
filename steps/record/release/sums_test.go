package release

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestParseSHA256SUMS(t *testing.T) {
	a, b := hex64('a'), hex64('b')
	tests := []struct {
		name  string
		data  string
		want  Sums
		field string // "" means valid
	}{
		{name: "empty", data: "", want: Sums{}},
		{name: "sorted lines", data: a + "  SHA256SUMX\n" + b + "  manifest.json\n", want: Sums{"SHA256SUMX": a, "manifest.json": b}},
		{name: "unsorted lines accepted", data: b + "  runtime/seccomp.json\n" + a + "  manifest.json\n", want: Sums{"runtime/seccomp.json": b, "manifest.json": a}},
		{name: "split at first double space", data: a + "  name  with spaces\n", want: Sums{"name  with spaces": a}},
		{name: "no trailing newline", data: a + "  manifest.json", field: SumsName},
		{name: "blank line", data: a + "  manifest.json\n\n", field: "line 2"},
		{name: "single space", data: a + " manifest.json\n", field: "line 1"},
		{name: "binary marker", data: a + " *manifest.json\n", field: "line 1"},
		{name: "uppercase checksum", data: strings.ToUpper(a) + "  manifest.json\n", field: "line 1"},
		{name: "short checksum", data: a[:63] + "  manifest.json\n", field: "line 1"},
		{name: "non-hex checksum", data: "g" + a[1:] + "  manifest.json\n", field: "line 1"},
		{name: "duplicate path", data: a + "  manifest.json\n" + b + "  manifest.json\n", field: "line 2"},
		{name: "absolute path", data: a + "  /etc/passwd\n", field: "line 1"},
		{name: "dotdot path", data: a + "  ../x\n", field: "line 1"},
		{name: "unclean path", data: a + "  runtime/./seccomp.json\n", field: "line 1"},
		{name: "trailing slash", data: a + "  runtime/\n", field: "line 1"},
		{name: "empty path", data: a + "  \n", field: "line 1"},
		{name: "backslash path", data: a + "  runtime\\x\n", field: "line 1"},
		{name: "percent path", data: a + "  a%2fb\n", field: "line 1"},
		{name: "carriage return", data: a + "  manifest.json\r\n", field: "line 1"},
		{name: "invalid utf-8", data: a + "  \xff\n", field: SumsName},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSHA256SUMS([]byte(tt.data))
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got %v, want %v", got, tt.want)
				}
				return
			}
			wantField(t, err, ErrInvalidSums, tt.field)
		})
	}
}

func TestParseSHA256SUMSSizeLimit(t *testing.T) {
	line := hex64('a') + "  f\n"
	data := bytes.Repeat([]byte(line), MaxMetadataSize/len(line)+1)
	if _, err := ParseSHA256SUMS(data); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("got %v, want ErrTooLarge", err)
	}
}

func TestSumsMarshal(t *testing.T) {
	s := Sums{"runtime/seccomp.json": hex64('c'), "SHA256SUMX": hex64('a'), "manifest.json": hex64('b')}
	data, err := s.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := hex64('a') + "  SHA256SUMX\n" + hex64('b') + "  manifest.json\n" + hex64('c') + "  runtime/seccomp.json\n"
	if string(data) != want {
		t.Fatalf("Marshal =\n%s\nwant\n%s", data, want)
	}
	back, err := ParseSHA256SUMS(data)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("round trip: %v %v", back, err)
	}
	for name, bad := range map[string]Sums{
		"bad checksum": {"manifest.json": "x"},
		"bad path":     {"../x": hex64('a')},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := bad.Marshal(); !errors.Is(err, ErrInvalidSums) {
				t.Fatalf("got %v, want ErrInvalidSums", err)
			}
		})
	}
}
