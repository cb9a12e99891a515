package provider

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

const installation = "0b5c8c4e-3f7a-4b8e-9d2a-6c1e5f0a7b3d"

func TestStorePaths(t *testing.T) {
	sum := sha256.Sum256([]byte(installation))
	p, err := StorePath("/var/lib/oac-node", installation)
	if err != nil {
		t.Fatal(err)
	}
	if want := "/var/lib/oac-node/.oac/m/" + hex.EncodeToString(sum[:])[:12]; p != want {
		t.Errorf("StorePath = %s, want %s", p, want)
	}
	rt, fw := strings.Repeat("a", 64), strings.Repeat("b", 64)
	gsum := sha256.Sum256([]byte(installation + ":" + rt + ":" + fw))
	g, err := GenerationStorePath("/var/lib/oac-node", installation, rt, fw)
	if err != nil || g != "/var/lib/oac-node/.oac/m/"+hex.EncodeToString(gsum[:])[:12] {
		t.Errorf("GenerationStorePath = %s, %v", g, err)
	}
	if s, _ := SelectStore("/var/lib/oac-node", installation, rt, fw, rt, fw); s != p {
		t.Errorf("same hashes select %s, want %s", s, p)
	}
	if s, _ := SelectStore("/var/lib/oac-node", installation, rt, fw, rt, strings.Repeat("c", 64)); s == p {
		t.Error("other firmware selected the installation store")
	}
	// 48 bytes exactly is allowed; one more is not.
	home := "/" + strings.Repeat("h", 48-len("/.oac/m/")-12-1)
	if p, err := StorePath(home, installation); err != nil || len(p) != 48 {
		t.Errorf("48-byte store: %q %v", p, err)
	}
	if _, err := StorePath(home+"x", installation); !errors.Is(err, ErrHomeTooLong) || !strings.Contains(err.Error(), "HOME is too long") {
		t.Errorf("49-byte store: %v", err)
	}
}
