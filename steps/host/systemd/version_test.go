package systemd

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"252.30-1~deb12u2", 252}, {"239", 239}, {"257.9-1", 257}, {"v258-rc1", 258},
		{"249.11-0ubuntu3.12", 249}, {"239 (239-82.el8_10.2)", 239}, {" 247.3-7+deb11u6\n", 247}, {"262", 262},
	} {
		got, err := ParseVersion(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseVersion(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "v", "systemd", "-1", "1234567"} {
		if n, err := ParseVersion(bad); err == nil {
			t.Errorf("ParseVersion(%q) = %d, want an error", bad, n)
		}
	}
}

type version string

func (v version) Version(context.Context) (string, error) { return string(v), nil }

func TestCheckVersion(t *testing.T) {
	for _, ok := range []string{"242", "247.3-7+deb11u6", "252.30-1~deb12u2", "257.9-1", "v258-rc1"} {
		if v, err := CheckVersion(context.Background(), version(ok)); err != nil || v != ok {
			t.Errorf("CheckVersion(%q) = %q, %v", ok, v, err)
		}
	}
	for _, old := range []string{"239", "241.7-2", "v240-rc3", "219"} {
		_, err := CheckVersion(context.Background(), version(old))
		if !errors.Is(err, ErrTooOld) {
			t.Errorf("CheckVersion(%q): %v, want ErrTooOld", old, err)
			continue
		}
		n, _ := ParseVersion(old)
		for _, want := range []string{"systemd " + strconv.Itoa(n), "systemd 242 or later", old} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("CheckVersion(%q): %q does not name %q", old, err, want)
			}
		}
	}
	if _, err := CheckVersion(context.Background(), version("unknown")); !errors.Is(err, ErrTooOld) {
		t.Errorf("a version that does not parse: %v", err)
	}
}
