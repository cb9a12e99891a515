package image

import (
	"context"
	"errors"
	"strings"
	"testing"
)

type notFoundErr struct{}

func (notFoundErr) Error() string { return "no such image" }
func (notFoundErr) NotFound()     {}

type img struct{ id, os, arch string }

// fakeInspector resolves refs to images; unknown refs are not found.
type fakeInspector struct {
	refs  map[string]img
	err   error
	calls []string
}

func (f *fakeInspector) ImageInspect(_ context.Context, ref string) (string, string, string, error) {
	f.calls = append(f.calls, ref)
	if f.err != nil {
		return "", "", "", f.err
	}
	i, ok := f.refs[ref]
	if !ok {
		return "", "", "", notFoundErr{}
	}
	return i.id, i.os, i.arch, nil
}

func TestResolve(t *testing.T) {
	cfg := "sha256:" + strings.Repeat("c", 64)
	man := "sha256:" + strings.Repeat("a", 64)
	other := "sha256:" + strings.Repeat("0", 64)
	want := Identity{ConfigDigest: cfg, ManifestDigest: man}
	cases := []struct {
		name   string
		refs   map[string]img
		id     string
		found  bool
		errIs  error
		anyErr bool
	}{
		{name: "classic store: ID is the config digest", refs: map[string]img{cfg: {cfg, "linux", "amd64"}}, id: cfg, found: true},
		{name: "containerd store: ID is the manifest digest", refs: map[string]img{man: {man, "linux", "amd64"}}, id: man, found: true},
		{name: "containerd store resolves the config too", refs: map[string]img{cfg: {man, "linux", "amd64"}, man: {man, "linux", "amd64"}}, id: man, found: true},
		{name: "absent", refs: map[string]img{}},
		{name: "another image under the name", refs: map[string]img{cfg: {other, "linux", "amd64"}, man: {other, "linux", "amd64"}}},
		{name: "wrong architecture", refs: map[string]img{cfg: {cfg, "linux", "arm64"}}},
		{name: "wrong os", refs: map[string]img{man: {man, "windows", "amd64"}}},
		{name: "wrong platform then right one", refs: map[string]img{cfg: {cfg, "linux", "arm64"}, man: {man, "linux", "amd64"}}, id: man, found: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ins := &fakeInspector{refs: c.refs}
			id, found, err := Resolve(context.Background(), ins, want)
			if err != nil || id != c.id || found != c.found {
				t.Fatalf("Resolve = %q, %v, %v; want %q, %v", id, found, err, c.id, c.found)
			}
		})
	}

	t.Run("engine error", func(t *testing.T) {
		boom := errors.New("daemon down")
		_, found, err := Resolve(context.Background(), &fakeInspector{err: boom}, want)
		if !errors.Is(err, boom) || found {
			t.Fatalf("got %v, %v", found, err)
		}
	})
	t.Run("never a tag or malformed digest", func(t *testing.T) {
		for _, w := range []Identity{{"oac-runtime:latest", man}, {cfg, ""}, {cfg, "sha256:ABC"}} {
			ins := &fakeInspector{}
			if _, _, err := Resolve(context.Background(), ins, w); !errors.Is(err, ErrBadDigest) || len(ins.calls) != 0 {
				t.Fatalf("%+v: %v, calls %v", w, err, ins.calls)
			}
		}
	})
}
