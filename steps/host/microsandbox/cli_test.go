package microsandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

const (
	digestA = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestB = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

var refA = Reference{Name: "oac-runtime", Digest: digestA}

func inspectJSON(digest, arch, os string) string {
	return `{"name": "oac-runtime", "digest": "` + digest + `", "architecture": "` + arch + `", "os": "` + os + `", "size": 1234}`
}

func TestEnvironmentIsExact(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://user:secret@proxy:3128")
	t.Setenv("OAC_ENROLLMENT_TOKEN", "secret-token")
	f := newFake(t)
	f.answer("image-list", "", 0)
	if _, err := f.cli.ListImages(context.Background()); err != nil {
		t.Fatal(err)
	}
	calls := f.calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	env := calls[0].env
	// The shell itself adds PWD (and some shells SHLVL and _).
	for _, k := range []string{"PWD", "SHLVL", "_", "OLDPWD"} {
		delete(env, k)
	}
	want := map[string]string{
		"MSB_BACKEND":        "local",
		"MSB_HOME":           f.cli.Store,
		"MSB_PATH":           f.cli.MSB,
		"MSB_LIBKRUNFW_PATH": f.cli.Firmware,
		"PATH":               SafePATH,
		"HOME":               f.cli.Store,
		"LANG":               "C.UTF-8",
	}
	if strings.Join(sortedKeys(env), " ") != strings.Join(sortedKeys(want), " ") {
		t.Fatalf("environment keys %v, want %v", sortedKeys(env), sortedKeys(want))
	}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
}

func TestVerifyImage(t *testing.T) {
	cases := []struct {
		name string
		out  string
		rc   int
		err  error
	}{
		{"matching", inspectJSON(digestA, "amd64", "linux"), 0, nil},
		{"array of one", "[" + inspectJSON(digestA, "amd64", "linux") + "]", 0, nil},
		{"nested platform", `{"digest": "` + digestA + `", "config": {"architecture": "amd64", "os": "linux"}}`, 0, nil},
		{"other digest", inspectJSON(digestB, "amd64", "linux"), 0, ErrImageMismatch},
		{"arm64", inspectJSON(digestA, "arm64", "linux"), 0, ErrImageMismatch},
		{"windows", inspectJSON(digestA, "amd64", "windows"), 0, ErrImageMismatch},
		{"malformed JSON", `{"digest": "` + digestA, 0, ErrMalformedOutput},
		{"no architecture", `{"digest": "` + digestA + `", "os": "linux"}`, 0, ErrMalformedOutput},
		{"conflicting digests", `{"digest": "` + digestA + `", "Digest": "` + digestB + `", "architecture": "amd64", "os": "linux"}`, 0, ErrMalformedOutput},
		{"digest not sha256", inspectJSON("md5:abc", "amd64", "linux"), 0, ErrMalformedOutput},
		{"two images", "[" + inspectJSON(digestA, "amd64", "linux") + "," + inspectJSON(digestA, "amd64", "linux") + "]", 0, ErrMalformedOutput},
		{"not found", "", 1, ErrCommandFailed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.answer("image-inspect", c.out, c.rc)
			err := f.cli.VerifyImage(context.Background(), refA)
			if c.err == nil && err != nil || !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if got := f.argLines(); len(got) != 1 || got[0] != "image inspect "+refA.String()+" --format json" {
				t.Errorf("calls %q", got)
			}
		})
	}
}

func TestEnsureImageLoadsOnlyWhenMissing(t *testing.T) {
	f := newFake(t)
	f.answer("image-inspect", inspectJSON(digestA, "amd64", "linux"), 0)
	loaded, err := f.cli.EnsureImage(context.Background(), "/srv/images/runtime.tar", refA)
	if err != nil || loaded {
		t.Fatalf("present image: loaded %v, %v", loaded, err)
	}

	f = newFake(t)
	f.answer("image-inspect", "", 1)
	f.answer("image-load", "", 0)
	f.then("image-load", `printf '%s' '`+inspectJSON(digestA, "amd64", "linux")+`' > "$D/image-inspect.out"; echo 0 > "$D/image-inspect.rc"`)
	loaded, err = f.cli.EnsureImage(context.Background(), "/srv/images/runtime.tar", refA)
	if err != nil || !loaded {
		t.Fatalf("missing image: loaded %v, %v", loaded, err)
	}
	want := []string{
		"image inspect " + refA.String() + " --format json",
		"image load --input /srv/images/runtime.tar --tag " + refA.String() + " --quiet",
		"image inspect " + refA.String() + " --format json",
	}
	if got := f.argLines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	f = newFake(t)
	f.answer("image-inspect", inspectJSON(digestB, "amd64", "linux"), 0)
	f.answer("image-load", "", 0)
	if _, err := f.cli.EnsureImage(context.Background(), "/srv/images/runtime.tar", refA); !errors.Is(err, ErrImageMismatch) {
		t.Fatalf("loaded image with another digest: %v", err)
	}

	f = newFake(t)
	f.answer("image-inspect", "", 1)
	f.answer("image-load", "", 3)
	if _, err := f.cli.EnsureImage(context.Background(), "/srv/images/runtime.tar", refA); !errors.Is(err, ErrCommandFailed) {
		t.Fatalf("failed load: %v", err)
	}
}

func TestListImages(t *testing.T) {
	cases := []struct {
		name  string
		out   string
		rc    int
		sleep int
		refs  []string
		err   error
	}{
		{name: "two images", out: refA.String() + "\noac-runtime@" + digestB + "\n", refs: []string{refA.String(), "oac-runtime@" + digestB}},
		{name: "empty store", out: "", refs: []string{}},
		{name: "blank lines", out: "\n" + refA.String() + "\n\n", refs: []string{refA.String()}},
		{name: "tag instead of digest", out: "oac-runtime:latest\n", err: ErrInventoryIncomplete},
		{name: "a header line", out: "REFERENCE\n" + refA.String() + "\n", err: ErrInventoryIncomplete},
		{name: "truncated", out: refA.String(), err: ErrInventoryIncomplete},
		{name: "non-zero exit", out: refA.String() + "\n", rc: 1, err: ErrInventoryIncomplete},
		{name: "timeout", out: "", sleep: 5, err: ErrInventoryIncomplete},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.answer("image-list", c.out, c.rc)
			if c.sleep > 0 {
				f.sleep("image-list", c.sleep)
				f.cli.QueryTimeout = 300 * time.Millisecond
			}
			start := time.Now()
			inv, err := f.cli.ListImages(context.Background())
			if c.err != nil {
				if !errors.Is(err, c.err) || inv != nil {
					t.Fatalf("inventory %v, err %v, want %v", inv, err, c.err)
				}
				var ie *InventoryError
				if !errors.As(err, &ie) || ie.Query != "image list" {
					t.Errorf("err %v is not an *InventoryError", err)
				}
				if c.sleep > 0 && time.Since(start) > 4*time.Second {
					t.Errorf("the timeout did not kill msb (took %v)", time.Since(start))
				}
				return
			}
			if err != nil || !inv.Complete() {
				t.Fatalf("ListImages: %v", err)
			}
			if strings.Join(inv.Refs(), ",") != strings.Join(sortStrings(c.refs), ",") {
				t.Errorf("refs %v, want %v", inv.Refs(), c.refs)
			}
		})
	}
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestRemoveImage(t *testing.T) {
	ctx := context.Background()
	t.Run("without a complete inventory nothing runs", func(t *testing.T) {
		f := newFake(t)
		if _, err := f.cli.RemoveImage(ctx, nil, refA); !errors.Is(err, ErrInventoryIncomplete) {
			t.Fatalf("err = %v", err)
		}
		if _, err := f.cli.RemoveImage(ctx, &Inventory{}, refA); !errors.Is(err, ErrInventoryIncomplete) {
			t.Fatalf("zero inventory: err = %v", err)
		}
		if len(f.calls()) != 0 {
			t.Errorf("msb ran: %q", f.argLines())
		}
	})
	t.Run("absent in a complete inventory", func(t *testing.T) {
		f := newFake(t)
		f.answer("image-list", "oac-runtime@"+digestB+"\n", 0)
		inv, err := f.cli.ListImages(ctx)
		if err != nil {
			t.Fatal(err)
		}
		removed, err := f.cli.RemoveImage(ctx, inv, refA)
		if err != nil || removed {
			t.Fatalf("removed %v, %v", removed, err)
		}
		if got := f.argLines(); len(got) != 1 {
			t.Errorf("calls %q", got)
		}
	})
	t.Run("present and removed", func(t *testing.T) {
		f := newFake(t)
		f.answer("image-list", refA.String()+"\n", 0)
		f.answer("image-remove", "", 0)
		f.then("image-remove", `: > "$D/image-list.out"`)
		inv, _ := f.cli.ListImages(ctx)
		removed, err := f.cli.RemoveImage(ctx, inv, refA)
		if err != nil || !removed {
			t.Fatalf("removed %v, %v", removed, err)
		}
		want := "image list --quiet\nimage remove " + refA.String() + "\nimage list --quiet"
		if got := strings.Join(f.argLines(), "\n"); got != want {
			t.Errorf("calls\n%s\nwant\n%s", got, want)
		}
	})
	t.Run("in use", func(t *testing.T) {
		f := newFake(t)
		f.answer("image-list", refA.String()+"\n", 0)
		f.answer("image-remove", "", 1)
		inv, _ := f.cli.ListImages(ctx)
		if _, err := f.cli.RemoveImage(ctx, inv, refA); !errors.Is(err, ErrRemoveRefused) || !errors.Is(err, ErrCommandFailed) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("still listed", func(t *testing.T) {
		f := newFake(t)
		f.answer("image-list", refA.String()+"\n", 0)
		f.answer("image-remove", "", 0)
		inv, _ := f.cli.ListImages(ctx)
		if _, err := f.cli.RemoveImage(ctx, inv, refA); !errors.Is(err, ErrRemoveRefused) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("verification listing fails", func(t *testing.T) {
		f := newFake(t)
		f.answer("image-list", refA.String()+"\n", 0)
		f.answer("image-remove", "", 0)
		f.then("image-remove", `echo 1 > "$D/image-list.rc"`)
		inv, _ := f.cli.ListImages(ctx)
		if _, err := f.cli.RemoveImage(ctx, inv, refA); !errors.Is(err, ErrInventoryIncomplete) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestSandboxes(t *testing.T) {
	cases := []struct {
		name string
		out  string
		rc   int
		n    int
		err  error
	}{
		{name: "empty", out: "[]\n", n: 0},
		{name: "two", out: `[{"name": "a"}, {"name": "b"}]`, n: 2},
		{name: "null", out: "null", err: ErrInventoryIncomplete},
		{name: "object", out: `{"sandboxes": []}`, err: ErrInventoryIncomplete},
		{name: "garbage", out: "no sandboxes", err: ErrInventoryIncomplete},
		{name: "empty output", out: "", err: ErrInventoryIncomplete},
		{name: "non-zero exit", out: "[]", rc: 2, err: ErrInventoryIncomplete},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			f.answer("sandbox-list", c.out, c.rc)
			n, err := f.cli.Sandboxes(context.Background())
			if c.err == nil && err != nil || !errors.Is(err, c.err) || n != c.n {
				t.Fatalf("n %d err %v, want %d %v", n, err, c.n, c.err)
			}
			if got := f.argLines(); len(got) != 1 || got[0] != "sandbox list --format json" {
				t.Errorf("calls %q", got)
			}
		})
	}
}

func TestCommandErrorExcerpt(t *testing.T) {
	f := newFake(t)
	f.answer("image-inspect", "", 4)
	f.then("image-inspect", `printf 'no such image\033[31m red\nsecond line\n' >&2`)
	err := f.cli.VerifyImage(context.Background(), refA)
	var ce *CommandError
	if !errors.As(err, &ce) || ce.ExitCode != 4 {
		t.Fatalf("err = %v", err)
	}
	if ce.Stderr != "no such image?[31m red" {
		t.Errorf("stderr excerpt %q", ce.Stderr)
	}
}

func TestParseReference(t *testing.T) {
	for _, s := range []string{"oac-runtime@" + digestA, "registry.example/oac/runtime@" + digestB} {
		if r, err := ParseReference(s); err != nil || r.String() != s {
			t.Errorf("ParseReference(%q) = %v, %v", s, r, err)
		}
	}
	for _, s := range []string{"", "oac-runtime", "oac-runtime:latest", "@" + digestA, "Oac@" + digestA, "oac@sha256:abc", "oac@" + strings.ToUpper(digestA)} {
		if _, err := ParseReference(s); !errors.Is(err, ErrInvalidReference) {
			t.Errorf("ParseReference(%q) = %v", s, err)
		}
	}
}
