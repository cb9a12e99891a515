package proxy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestPrecedence(t *testing.T) {
	set := func(v string) Setting { return Setting{Value: v, Set: true} }
	cases := []struct {
		name string
		env  map[string]string
		want Env
	}{
		{"none", map[string]string{"PATH": "/bin"}, Env{}},
		{"uppercase only", map[string]string{"HTTPS_PROXY": "http://u:3128", "HTTP_PROXY": "http://h:3128", "NO_PROXY": "a"},
			Env{HTTP: set("http://h:3128"), HTTPS: set("http://u:3128"), NoProxy: set("a")}},
		{"lowercase wins", map[string]string{"https_proxy": "http://l:1", "HTTPS_PROXY": "http://u:2", "no_proxy": "x", "NO_PROXY": "y"},
			Env{HTTPS: set("http://l:1"), NoProxy: set("x")}},
		{"empty lowercase disables uppercase", map[string]string{"https_proxy": "", "HTTPS_PROXY": "http://u:2", "http_proxy": "", "HTTP_PROXY": "http://u:2", "no_proxy": "", "NO_PROXY": "*"},
			Env{HTTP: set(""), HTTPS: set(""), NoProxy: set("")}},
		{"empty uppercase is set", map[string]string{"HTTPS_PROXY": ""}, Env{HTTPS: set("")}},
		{"each variable on its own", map[string]string{"https_proxy": "", "HTTPS_PROXY": "http://u:2", "HTTP_PROXY": "http://h:3"},
			Env{HTTP: set("http://h:3"), HTTPS: set("")}},
		{"other proxy variables ignored", map[string]string{"ALL_PROXY": "x", "ftp_proxy": "f"}, Env{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := FromLookup(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			if got != tc.want {
				t.Fatalf("got %#v, want %#v", fields(got), fields(tc.want))
			}
			var environ []string
			for k, v := range tc.env {
				environ = append(environ, k+"="+v)
			}
			if got := FromEnviron(environ); got != tc.want {
				t.Fatalf("from environ: got %#v, want %#v", fields(got), fields(tc.want))
			}
		})
	}
}

// fields shows a test's snapshot, values included.
func fields(e Env) [3][2]any {
	return [3][2]any{{e.HTTP.Value, e.HTTP.Set}, {e.HTTPS.Value, e.HTTPS.Set}, {e.NoProxy.Value, e.NoProxy.Set}}
}

func TestFromEnvironFirstEntryWins(t *testing.T) {
	got := FromEnviron([]string{"http_proxy=http://first:1", "http_proxy=http://second:2", "NO_PROXY=", "NO_PROXY=x", "https_proxy", "HTTPS_PROXY=u"})
	want := Env{HTTP: Setting{"http://first:1", true}, HTTPS: Setting{"u", true}, NoProxy: Setting{"", true}}
	if got != want {
		t.Fatalf("got %v, want %v", got.Normalized(), want.Normalized())
	}
}

func TestNormalized(t *testing.T) {
	for _, tc := range []struct {
		name    string
		environ []string
		want    []string
	}{
		{name: "none", environ: []string{"PATH=/bin", "HOME=/root"}, want: nil},
		{name: "lowercase only", environ: []string{"https_proxy=http://p:3128"},
			want: []string{"https_proxy=http://p:3128", "HTTPS_PROXY=http://p:3128"}},
		{name: "uppercase only", environ: []string{"HTTP_PROXY=http://P:1"},
			want: []string{"http_proxy=http://P:1", "HTTP_PROXY=http://P:1"}},
		{name: "lowercase wins", environ: []string{"HTTP_PROXY=http://upper:1", "http_proxy=http://lower:2"},
			want: []string{"http_proxy=http://lower:2", "HTTP_PROXY=http://lower:2"}},
		{name: "empty lowercase wins", environ: []string{"NO_PROXY=example.com", "no_proxy="},
			want: []string{"no_proxy=", "NO_PROXY="}},
		{name: "empty uppercase kept", environ: []string{"HTTPS_PROXY="},
			want: []string{"https_proxy=", "HTTPS_PROXY="}},
		{name: "all three in fixed order", environ: []string{"no_proxy=n", "HTTPS_PROXY=s", "http_proxy=h", "ALL_PROXY=x", "ftp_proxy=f"},
			want: []string{"http_proxy=h", "HTTP_PROXY=h", "https_proxy=s", "HTTPS_PROXY=s", "no_proxy=n", "NO_PROXY=n"}},
		{name: "value with equals", environ: []string{"http_proxy=http://u:p=w@h:1"},
			want: []string{"http_proxy=http://u:p=w@h:1", "HTTP_PROXY=http://u:p=w@h:1"}},
		{name: "malformed entry ignored", environ: []string{"http_proxy"}, want: nil},
		{name: "first entry wins", environ: []string{"https_proxy=http://a:1", "https_proxy=http://b:2"},
			want: []string{"https_proxy=http://a:1", "HTTPS_PROXY=http://a:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromEnviron(tc.environ).Normalized(); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNeverPrintsValues(t *testing.T) {
	p := FromEnviron([]string{"https_proxy=http://user:secret@proxy:3128", "NO_PROXY=secret.example"})
	for _, s := range []string{p.String(), fmt.Sprint(p), fmt.Sprintf("%v %+v %#v %s", p, p, p, p),
		fmt.Sprintf("%v %+v %#v %s", p.HTTPS, p.HTTPS, p.HTTPS, p.HTTPS), fmt.Sprintf("%v %+v", &p, []Env{p})} {
		if strings.Contains(s, "secret") {
			t.Errorf("printed %q", s)
		}
	}
	if got, want := p.String(), "proxy variables [https_proxy no_proxy]"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
	if got := fmt.Sprint(p.HTTP, p.HTTPS, Setting{Set: true}); got != "unset set set empty" {
		t.Errorf("settings print %q", got)
	}
}
