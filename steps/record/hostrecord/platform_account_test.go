package hostrecord

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// account.json as the platform's installer writes it is read: created or
// adopted, the home's mode as Python's oct() writes it (or null, or
// absent); anything else is refused as invalid.
func TestReadPlatformAccount(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		mode       os.FileMode
		hasMode    bool
		bad        string
	}{
		{name: "created", text: `{"created": true, "format": 1, "groups_added": ["docker"], "uid": 990}`},
		{name: "adopted 0o755", text: `{"created": false, "format": 1, "groups_added": [], "home_mode": "0o755", "uid": 990}`, mode: 0o755, hasMode: true},
		{name: "adopted 0750", text: `{"created": false, "format": 1, "groups_added": ["kvm"], "home_mode": "0750", "uid": 990}`, mode: 0o750, hasMode: true},
		{name: "adopted without a home", text: `{"created": false, "format": 1, "groups_added": [], "home_mode": null, "uid": 990}`},
		{name: "format 2", text: `{"created": true, "format": 2, "groups_added": [], "uid": 990}`, bad: "format 2"},
		{name: "mode not octal", text: `{"created": false, "format": 1, "groups_added": [], "home_mode": "0o9", "uid": 990}`, bad: "octal"},
		{name: "mode a number", text: `{"created": false, "format": 1, "groups_added": [], "home_mode": 493, "uid": 990}`, bad: "home_mode"},
		{name: "unknown key", text: `{"created": true, "format": 1, "groups_added": [], "uid": 990, "extra": 1}`, bad: "extra"},
		{name: "uid missing", text: `{"created": true, "format": 1, "groups_added": []}`, bad: "uid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			if err := os.WriteFile(filepath.Join(h.EtcDir(), PlatformAccountName), []byte(tc.text+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			a, ok, err := ReadPlatformAccount(h)
			if tc.bad != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("got %+v %v, want a refusal naming %q", a, err, tc.bad)
				}
				return
			}
			if err != nil || !ok || a.UID != 990 {
				t.Fatalf("got %+v %v %v", a, ok, err)
			}
			mode, has, err := a.Mode()
			if err != nil || has != tc.hasMode || mode != tc.mode {
				t.Errorf("mode %v %v %v, want %v %v", mode, has, err, tc.mode, tc.hasMode)
			}
		})
	}
	t.Run("absent", func(t *testing.T) {
		if _, ok, err := ReadPlatformAccount(newHost(t)); ok || err != nil {
			t.Errorf("%v %v", ok, err)
		}
	})
	t.Run("Marshal is read back", func(t *testing.T) {
		h := newHost(t)
		data, err := PlatformAccount{Format: 1, Created: false, UID: 7, GroupsAdded: []string{"docker"}, HomeMode: "0o711"}.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(h.EtcDir(), PlatformAccountName), data, 0o644)
		a, ok, err := ReadPlatformAccount(h)
		if m, _, _ := a.Mode(); err != nil || !ok || a.UID != 7 || m != 0o711 {
			t.Errorf("%+v %v %v", a, ok, err)
		}
	})
}
