package systemd

import (
	"errors"
	"strings"
	"testing"

	"github.com/openagentcore/oac-node-install/steps/record/proxy"
)

func TestRenderEnvFile(t *testing.T) {
	const lo = "localhost,127.0.0.1,::1"
	for _, tc := range []struct {
		name  string
		proxy proxy.Env
		want  string // "" means no file
	}{
		{"no proxy variables", proxy.Env{}, ""},
		{"only a bypass list", snapshot("no_proxy=example.com"), ""},
		{"empty proxies", snapshot("http_proxy=", "https_proxy="), ""},
		{"set empty lowercase hides uppercase", snapshot("http_proxy=", "HTTP_PROXY=http://up:3128"), ""},
		{"uppercase copied to lowercase", snapshot("HTTPS_PROXY=http://p:3128"),
			"https_proxy=\"http://p:3128\"\nHTTPS_PROXY=\"http://p:3128\"\nno_proxy=\"" + lo + "\"\nNO_PROXY=\"" + lo + "\"\n"},
		{"lowercase wins over uppercase", snapshot("http_proxy=http://low:1", "HTTP_PROXY=http://up:2"),
			"http_proxy=\"http://low:1\"\nHTTP_PROXY=\"http://low:1\"\nno_proxy=\"" + lo + "\"\nNO_PROXY=\"" + lo + "\"\n"},
		{"set empty lowercase https beside an http proxy", snapshot("http_proxy=http://p:1", "https_proxy=", "HTTPS_PROXY=http://up:2"),
			"http_proxy=\"http://p:1\"\nHTTP_PROXY=\"http://p:1\"\nhttps_proxy=\"\"\nHTTPS_PROXY=\"\"\nno_proxy=\"" + lo + "\"\nNO_PROXY=\"" + lo + "\"\n"},
		{"all six, bypass list extended", snapshot("http_proxy=http://p:1", "https_proxy=http://p:2", "no_proxy=example.com,.corp", "HTTP_PROXY=x", "HTTPS_PROXY=y", "NO_PROXY=z"),
			"http_proxy=\"http://p:1\"\nHTTP_PROXY=\"http://p:1\"\nhttps_proxy=\"http://p:2\"\nHTTPS_PROXY=\"http://p:2\"\nno_proxy=\"example.com,.corp," + lo + "\"\nNO_PROXY=\"example.com,.corp," + lo + "\"\n"},
		{"uppercase bypass list copied", snapshot("https_proxy=http://p:2", "NO_PROXY=10.0.0.0/8,"),
			"https_proxy=\"http://p:2\"\nHTTPS_PROXY=\"http://p:2\"\nno_proxy=\"10.0.0.0/8," + lo + "\"\nNO_PROXY=\"10.0.0.0/8," + lo + "\"\n"},
		{"set empty bypass list", snapshot("https_proxy=http://p:2", "no_proxy=", "NO_PROXY=ignored"),
			"https_proxy=\"http://p:2\"\nHTTPS_PROXY=\"http://p:2\"\nno_proxy=\"" + lo + "\"\nNO_PROXY=\"" + lo + "\"\n"},
		{"quote and backslash escaped", snapshot("http_proxy=" + `http://u:p"a\ss@p:1`),
			"http_proxy=\"http://u:p\\\"a\\\\ss@p:1\"\nHTTP_PROXY=\"http://u:p\\\"a\\\\ss@p:1\"\nno_proxy=\"" + lo + "\"\nNO_PROXY=\"" + lo + "\"\n"},
		{"line break in a bypass list that is not written", snapshot("no_proxy=a\nb"), ""},
		{"line break in an overridden uppercase value", snapshot("http_proxy=http://p:1", "HTTP_PROXY=a\nb"),
			"http_proxy=\"http://p:1\"\nHTTP_PROXY=\"http://p:1\"\nno_proxy=\"" + lo + "\"\nNO_PROXY=\"" + lo + "\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, write, err := RenderEnvFile(tc.proxy)
			if err != nil {
				t.Fatal(err)
			}
			if write != (tc.want != "") {
				t.Fatalf("write = %v, want %v", write, tc.want != "")
			}
			if string(text) != tc.want {
				t.Fatalf("env file:\n%s\nwant:\n%s", text, tc.want)
			}
		})
	}
}

func TestRenderEnvFileRefusesLineBreaks(t *testing.T) {
	const secret = "s3cr3t-password"
	for _, tc := range []struct {
		name  string
		proxy proxy.Env
	}{
		{"newline in proxy", snapshot("https_proxy=http://u:" + secret + "@p:1\nX=1")},
		{"carriage return in uppercase proxy", snapshot("HTTP_PROXY=http://u:" + secret + "@p:1\r")},
		{"newline in bypass list", snapshot("http_proxy=http://p:1", "no_proxy="+secret+"\nexample.com")},
		{"NUL", snapshot("http_proxy=http://" + secret + "\x00")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, write, err := RenderEnvFile(tc.proxy)
			if !errors.Is(err, ErrUnrepresentable) || write || text != nil {
				t.Fatalf("want a refusal, got write=%v err=%v", write, err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Fatalf("the refusal shows the value: %v", err)
			}
		})
	}
}

// snapshot is the proxy snapshot of an environment list.
func snapshot(environ ...string) proxy.Env { return proxy.FromEnviron(environ) }
