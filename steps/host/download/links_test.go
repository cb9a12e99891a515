package download

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

// Links and odd files where the part or the target belong are refused as
// local failures, never followed and never transfer errors.
func TestDownloadRefusesLinksAndOddFiles(t *testing.T) {
	data := payload(2000, 9)
	var rec recorder
	srv := tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.add(r)
		serveContent(w, r, data)
	}))
	c := newTestClient(t, testOptions(srv))
	cases := []struct {
		name     string
		setup    func(t *testing.T, target, outside string)
		conflict bool
	}{
		{"target is a symlink", func(t *testing.T, target, outside string) {
			writeFile(t, outside, data)
			os.Symlink(outside, target)
		}, true},
		{"target is a directory", func(t *testing.T, target, outside string) { os.Mkdir(target, 0o700) }, true},
		{"part is a symlink", func(t *testing.T, target, outside string) {
			writeFile(t, outside, data[:100])
			os.Symlink(outside, PartPath(target))
		}, false},
		{"part is a directory", func(t *testing.T, target, outside string) { os.Mkdir(PartPath(target), 0o700) }, false},
		{"validator is a symlink", func(t *testing.T, target, outside string) {
			writeFile(t, PartPath(target), data[:100])
			writeFile(t, outside, []byte(`"v1"`))
			os.Symlink(outside, ValidatorPath(target))
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			target := targetIn(t)
			outside := filepath.Join(t.TempDir(), "outside")
			tc.setup(t, target, outside)
			before := len(rec.all())
			err := c.Download(context.Background(), Request{URL: srv.URL, Target: target, Size: int64(len(data)), SHA256: hexSum(data), Mode: 0o600})
			if tc.name == "validator is a symlink" {
				// The link is not read: the download resumes without If-Range.
				if err != nil {
					t.Fatal(err)
				}
				if h := rec.all()[before].Header; h.Get("If-Range") != "" || h.Get("Range") != "bytes=100-" {
					t.Fatalf("headers %v", h)
				}
				if b, _ := os.ReadFile(outside); string(b) != `"v1"` {
					t.Fatal("file behind the link changed")
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if errors.Is(err, ErrTransfer) {
				t.Fatalf("local refusal classified as transfer error: %v", err)
			}
			if tc.conflict != errors.Is(err, ErrTargetConflict) {
				t.Fatalf("error %v: conflict %v expected", err, tc.conflict)
			}
			if len(rec.all()) != before {
				t.Fatal("request sent despite the refusal")
			}
			if b, err := os.ReadFile(outside); err == nil && len(b) != len(data) && len(b) != 100 {
				t.Fatal("file behind the link changed")
			}
		})
	}
}
