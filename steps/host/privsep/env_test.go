package privsep

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestProxyNormalized(t *testing.T) {
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ProxyFromEnviron(tc.environ).Normalized(); !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestProxyEnvNeverPrintsValues(t *testing.T) {
	p := ProxyFromEnviron([]string{"https_proxy=http://user:secret@proxy:3128"})
	for _, s := range []string{p.String(), fmt.Sprint(p), fmt.Sprintf("%v %+v %#v %s", p, p, p, p)} {
		if strings.Contains(s, "secret") {
			t.Errorf("printed %q", s)
		}
	}
	if !strings.Contains(p.String(), "https_proxy") {
		t.Errorf("String %q does not name the variable", p.String())
	}
}

func TestChildEnv(t *testing.T) {
	got := ChildEnv("/var/lib/oac-node", ProxyEnv{"NO_PROXY": "x"})
	want := []string{
		"HOME=/var/lib/oac-node", "USER=oac-node", "LOGNAME=oac-node",
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LANG=C.UTF-8", "DOCKER_CONFIG=/run/oac-node-docker",
		"no_proxy=x", "NO_PROXY=x",
	}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
