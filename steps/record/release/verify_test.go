package release

import (
	"errors"
	"testing"
)

// testRelease returns manifest bytes and SHA256SUMS bytes listing them.
func testRelease(t *testing.T) ([]byte, Sums) {
	t.Helper()
	mb, err := testManifest().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return mb, Sums{ManifestName: SHA256Hex(mb), SeccompName: hex64('5'), InstallerName: hex64('6')}
}

func TestVerifyRelease(t *testing.T) {
	mb, _ := testRelease(t)
	tests := []struct {
		name     string
		provider string
		manifest []byte
		sums     func(Sums)
		want     error
	}{
		{name: "docker", provider: ProviderDocker},
		{name: "microsandbox", provider: ProviderMicrosandbox},
		{name: "unknown provider", provider: "e2b", want: ErrUnknownProvider},
		{name: "manifest not listed", provider: ProviderDocker, sums: func(s Sums) { delete(s, ManifestName) }, want: ErrNotListed},
		{name: "seccomp not listed", provider: ProviderDocker, sums: func(s Sums) { delete(s, SeccompName) }, want: ErrNotListed},
		{name: "manifest hash differs", provider: ProviderDocker, sums: func(s Sums) { s[ManifestName] = hex64('0') }, want: ErrChecksumMismatch},
		{name: "manifest byte changed", provider: ProviderDocker, manifest: append(append([]byte{}, mb...), ' '), want: ErrChecksumMismatch},
		{name: "manifest invalid but listed", provider: ProviderDocker, manifest: []byte(`{}`), sums: func(s Sums) { s[ManifestName] = SHA256Hex([]byte(`{}`)) }, want: ErrInvalidManifest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			manifest, sums := testRelease(t)
			if tt.manifest != nil {
				manifest = tt.manifest
			}
			if tt.sums != nil {
				tt.sums(sums)
			}
			sb, err := sums.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			r, err := VerifyRelease(manifest, sb, tt.provider)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("got %v, want %v", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.SeccompSHA256 != hex64('5') || r.Manifest.SourceCommit != testCommit {
				t.Fatalf("release %+v", r)
			}
			arts := r.Artifacts()
			wantN := len(Catalog(tt.provider)) - 1
			if len(arts) != wantN {
				t.Fatalf("%d artifacts, want %d", len(arts), wantN)
			}
			for _, a := range arts {
				if a.Role == RolePolicy || a.Filename != FileName(testCommit, a.Suffix) {
					t.Fatalf("artifact %+v", a)
				}
			}
		})
	}
	if _, err := VerifyRelease(mb, []byte("x\n"), ProviderDocker); !errors.Is(err, ErrInvalidSums) {
		t.Fatalf("malformed SHA256SUMS: %v", err)
	}
}

func TestCatalog(t *testing.T) {
	if got := Catalog("e2b"); got != nil {
		t.Fatalf("Catalog(e2b) = %v", got)
	}
	docker := Catalog(ProviderDocker)
	micro := Catalog(ProviderMicrosandbox)
	if len(docker) != 3 || len(micro) != 6 {
		t.Fatalf("catalog sizes %d, %d", len(docker), len(micro))
	}
	var runtime []string
	for _, a := range micro {
		if a.Role == RoleRuntime {
			runtime = append(runtime, a.Path)
		}
	}
	want := []string{PathMicroHelper, PathMicroRuntime, PathMicroFirmware}
	for i := range want {
		if runtime[i] != want[i] {
			t.Fatalf("runtime order %v, want %v", runtime, want)
		}
	}
	docker[0].Path = "changed"
	if Catalog(ProviderDocker)[0].Path != PathNode {
		t.Fatal("Catalog returned shared storage")
	}
	if !InCatalog(PathMicroFirmware) || InCatalog("native/bin/oac-daemon") {
		t.Fatal("InCatalog")
	}
	if got := FileName(testCommit, "msb"); got != "oac-"+testCommit+"-linux-amd64-msb" {
		t.Fatalf("FileName = %q", got)
	}
}
