package bootstrap

import (
	"errors"
	"strings"
	"testing"
)

const (
	testID  = "0b6c3f4e-8a51-4d2e-9c1f-5a7b3d2e1f00"
	testSHA = "ab2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccddeeff001"
)

func installOptions() Options {
	return Options{
		Console:        "https://console.example.com",
		CoreURL:        "https://core.example.com",
		InstallationID: testID,
		Provider:       "docker",
		SHA256:         testSHA,
		Token:          "tok-123",
	}
}

func TestRenderRefusesInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Options)
		field string
	}{
		{"console missing", func(o *Options) { o.Console = "" }, "--console"},
		{"console with path", func(o *Options) { o.Console = "https://c.example.com/x" }, "--console"},
		{"console with credentials", func(o *Options) { o.Console = "https://u:p@c.example.com" }, "--console"},
		{"console with quote", func(o *Options) { o.Console = "https://c'.example.com" }, "--console"},
		{"console plain http", func(o *Options) { o.Console = "http://c.example.com" }, "--console"},
		{"core plain http", func(o *Options) { o.CoreURL = "http://core.example.com" }, "--core-url"},
		{"core with query", func(o *Options) { o.CoreURL = "https://core.example.com?x" }, "--core-url"},
		{"installation id upper case", func(o *Options) { o.InstallationID = strings.ToUpper(testID) }, "--installation-id"},
		{"sha256 short", func(o *Options) { o.SHA256 = testSHA[:63] }, "--sha256"},
		{"provider e2b", func(o *Options) { o.Provider = "e2b" }, "--provider"},
		{"provider missing", func(o *Options) { o.Provider = "" }, "--provider"},
		{"core ca relative", func(o *Options) { o.CoreCA = "ca.pem" }, "--core-ca"},
		{"core ca newline", func(o *Options) { o.CoreCA = "/etc/ca\n.pem" }, "--core-ca"},
		{"token missing", func(o *Options) { o.Token = "" }, "--token-stdin"},
		{"token with space", func(o *Options) { o.Token = "a b" }, "--token-stdin"},
		{"token with newline", func(o *Options) { o.Token = "a\nb" }, "--token-stdin"},
		{"token too long", func(o *Options) { o.Token = strings.Repeat("t", MaxTokenLength+1) }, "--token-stdin"},
		{"force without uninstall", func(o *Options) { o.Force = true }, "--force"},
		{"uninstall with token", func(o *Options) { o.Uninstall = true }, "--token-stdin"},
		{"uninstall with core url", func(o *Options) { o.Uninstall = true; o.Token = "" }, "--uninstall"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := installOptions()
			tc.edit(&o)
			out, err := Render(o)
			var fe *FieldError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Render = %v, want ErrInvalid on %s", err, tc.field)
			}
			if out != "" {
				t.Fatalf("refused options rendered %q", out)
			}
		})
	}
}

func TestRenderAcceptsValidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want []string
	}{
		{"install", func(*Options) {}, []string{
			"printf '%s\\n' 'tok-123' | ",
			" --enrollment-token-stdin --source-url 'https://console.example.com' --core-url 'https://core.example.com' --provider 'docker' --installation-id '" + testID + "')\n",
		}},
		{"trailing slashes dropped", func(o *Options) { o.Console += "/"; o.CoreURL += "/" }, []string{
			"'https://console.example.com/node-install/oac-node-install'",
			"--core-url 'https://core.example.com' ",
		}},
		{"loopback http", func(o *Options) { o.Console = "http://127.0.0.1:8080"; o.CoreURL = "http://localhost:8081" }, []string{
			"'http://127.0.0.1:8080/node-install/oac-node-install'",
		}},
		{"insecure origin and CA", func(o *Options) {
			o.Console = "http://10.0.0.5"
			o.AllowInsecureOrigin = true
			o.CoreCA = "/etc/oac/it's ca.pem"
		}, []string{
			" --cacert '/etc/oac/it'\\''s ca.pem' ",
			"--core-url 'https://core.example.com' --allow-insecure-origin --core-ca '/etc/oac/it'\\''s ca.pem' --provider",
		}},
		{"uninstall", func(o *Options) {
			*o = Options{Console: o.Console, InstallationID: testID, SHA256: testSHA, Uninstall: true}
		}, []string{
			" --uninstall --installation-id '" + testID + "' </dev/null)\n",
		}},
		{"uninstall force", func(o *Options) {
			*o = Options{Console: o.Console, InstallationID: testID, SHA256: testSHA, Uninstall: true, Force: true}
		}, []string{
			" --uninstall --installation-id '" + testID + "' --force </dev/null)\n",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := installOptions()
			tc.edit(&o)
			out, err := Render(o)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(out, " (umask 077\n") {
				t.Fatalf("command does not start with a space and a private subshell:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("command lacks %q:\n%s", w, out)
				}
			}
			for _, w := range []string{"--max-filesize 67108864", "--speed-limit 1024", "--speed-time 60"} {
				if !strings.Contains(out, w) {
					t.Errorf("command lacks %q", w)
				}
			}
			var curl string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "curl ") {
					curl = l
				}
			}
			for _, bad := range []string{" -L ", " -k ", "--insecure", "--location"} {
				if curl == "" || strings.Contains(curl, bad) {
					t.Errorf("curl line %q has %q", curl, bad)
				}
			}
			if o.Uninstall && strings.Contains(out, "printf '%s\\n' '") {
				t.Error("uninstall command feeds a token")
			}
			if n := strings.Count(out, "--allow-insecure-origin"); n > 1 {
				t.Errorf("--allow-insecure-origin %d times", n)
			}
		})
	}
}

func TestQuote(t *testing.T) {
	for in, want := range map[string]string{
		"":      "''",
		"a":     "'a'",
		"it's":  `'it'\''s'`,
		"''":    `''\'''\'''`,
		"$(x)`": "'$(x)`'",
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestLogCommand(t *testing.T) {
	if got, want := LogCommand(testID), "sudo journalctl -u oac-node-"+testID+".service"; got != want {
		t.Fatalf("LogCommand = %q, want %q", got, want)
	}
}
