package proxy

import (
	"net/http"
	"strings"
	"testing"
)

func TestNoProxyMatch(t *testing.T) {
	cases := []struct {
		noProxy, host, port string
		want                bool
	}{
		{"", "example.com", "443", false},
		{"*", "example.com", "443", true},
		{"example.com", "example.com", "443", true},
		{"example.com", "a.example.com", "443", true},
		{"example.com", "badexample.com", "443", false},
		{".example.com", "example.com", "443", true},
		{".example.com", "a.b.example.com", "443", true},
		{"*.example.com", "a.example.com", "443", true},
		{"EXAMPLE.com.", "example.COM.", "443", true},
		{"other.org, example.com", "example.com", "443", true},
		{"other.org example.com", "example.com", "443", true},
		{"example.com:8443", "example.com", "443", false},
		{"example.com:8443", "example.com", "8443", true},
		{"10.1.2.3", "10.1.2.3", "443", true},
		{"10.1.2.3", "10.1.2.4", "443", false},
		{"10.0.0.0/8", "10.200.1.1", "443", true},
		{"10.0.0.0/8", "11.0.0.1", "443", false},
		{"10.0.0.0/8", "ten.example", "443", false},
		{"10.0.0.0/8:443", "10.0.0.1", "443", true},
		{"10.0.0.0/8:443", "10.0.0.1", "80", false},
		{"::1", "::1", "443", true},
		{"[::1]:443", "::1", "443", true},
		{"fd00::/8", "fd12::1", "443", true},
		{"127.0.0.1", "::ffff:127.0.0.1", "443", true},
		{"127.0.0.1:8080", "127.0.0.1", "443", false},
		{",,, ", "example.com", "443", false},
	}
	for _, tc := range cases {
		t.Run(tc.noProxy+"→"+tc.host+":"+tc.port, func(t *testing.T) {
			if got := matchNoProxy(parseNoProxy(tc.noProxy), tc.host, tc.port); got != tc.want {
				t.Fatalf("got %v", got)
			}
		})
	}
}

func TestProxyFunc(t *testing.T) {
	p := FromEnviron([]string{"http_proxy=plain.example:3128", "HTTPS_PROXY=https://user:pw@secure.example", "no_proxy=internal.example,10.0.0.0/8"})
	f, err := p.ProxyFunc()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ url, want string }{
		{"http://a.example/x", "http://plain.example:3128"},
		{"https://a.example/x", "https://user:pw@secure.example"},
		{"https://b.internal.example/x", ""},
		{"http://10.1.2.3:8080/x", ""},
		{"ftp://a.example/x", ""},
	} {
		r, err := http.NewRequest(http.MethodGet, tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := f(r)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if u != nil {
			got = u.String()
		}
		if got != tc.want {
			t.Errorf("%s: proxy %q, want %q", tc.url, got, tc.want)
		}
	}
}

func TestSelectorRefusesWithoutValue(t *testing.T) {
	const pass = "Pr0xyS3cret"
	for _, tc := range []struct{ env, name string }{
		{"https_proxy=http://alice:" + pass + "@host:notaport", "https_proxy/HTTPS_PROXY"},
		{"HTTP_PROXY=socks5://alice:" + pass + "@host:1080", "http_proxy/HTTP_PROXY"},
		{"https_proxy=http://alice:" + pass + "@", "https_proxy/HTTPS_PROXY"},
		{"https_proxy=http://alice:" + pass + "@[::1", "https_proxy/HTTPS_PROXY"},
	} {
		_, err := FromEnviron([]string{tc.env}).ProxyFunc()
		if err == nil {
			t.Fatalf("%s accepted", tc.name)
		}
		if msg := err.Error(); strings.Contains(msg, pass) || strings.Contains(msg, "alice") || !strings.HasPrefix(msg, "proxy settings: "+tc.name) {
			t.Errorf("error %q", msg)
		}
	}
}

func TestSecrets(t *testing.T) {
	s, err := FromEnviron([]string{"https_proxy=http://alice:p%2Fw@proxy:1"}).Selector()
	if err != nil {
		t.Fatal(err)
	}
	got := s.Secrets()
	want := []string{"alice:p%2Fw", "alice:p/w", "p%2Fw", "p%2Fw", "p/w"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("secrets %q, want %q", got, want)
	}
}
