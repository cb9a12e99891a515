package install

import (
	"strings"
	"testing"
)

// TestRejectionLineShapes: the platform's node program prints its
// rejection line bare, with Core's code, and for 401 with ": <error text>"
// after it (services/core/internal/sandbox/node/enrollment.go); each is
// read as the status and the code, and the error text never reaches the
// message the operator sees.
func TestRejectionLineShapes(t *testing.T) {
	for _, tc := range []struct {
		name, stderr string
		status       int
		code, says   string
	}{
		{"bare", "node enrollment rejected (HTTP 503)\n", 503, "", "the registration was not confirmed: Core answered HTTP 503"},
		{"bare without newline", "node enrollment rejected (HTTP 500)", 500, "", "Core answered HTTP 500"},
		{"with a code", "node enrollment rejected (HTTP 409 sandbox_specification_mismatch)\n", 409, "sandbox_specification_mismatch",
			"the registration was not confirmed: Core answered HTTP 409 sandbox_specification_mismatch"},
		{"address mismatch", "node enrollment rejected (HTTP 409 sandbox_node_address_mismatch)\n", 409, CodeAddressMismatch, "Core's public URL changed"},
		{"401 with the error text", "node enrollment rejected (HTTP 401): sandbox node authentication rejected\n", 401, "", "expired or was already used"},
		{"401 with a code and the error text", "node enrollment rejected (HTTP 401 invalid_enrollment_token): sandbox node authentication rejected\n",
			401, "invalid_enrollment_token", "expired or was already used"},
		{"after log lines", "time=x level=INFO msg=\"sandbox node configuration loaded\" config_path=/srv/secret/provider.json\nnode enrollment rejected (HTTP 403 forbidden)\n",
			403, "forbidden", "Core answered HTTP 403 forbidden"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rej, ok := parseRejection([]byte(tc.stderr))
			if !ok || rej.Status != tc.status || rej.Code != tc.code {
				t.Fatalf("parseRejection(%q) = %+v %v", tc.stderr, rej, ok)
			}
			msg := rej.Error()
			if !strings.Contains(msg, tc.says) {
				t.Errorf("message %q lacks %q", msg, tc.says)
			}
			for _, secret := range []string{"authentication rejected", "/srv/secret", "config_path"} {
				if strings.Contains(msg, secret) {
					t.Errorf("message %q echoes the program's text %q", msg, secret)
				}
			}
		})
	}
}

// TestRejectionLineNotMatched: lines that only resemble the rejection
// line are not Core's answer.
func TestRejectionLineNotMatched(t *testing.T) {
	for _, s := range []string{
		"",
		"enrollment response unconfirmed; retry with the same state directory\n",
		"x node enrollment rejected (HTTP 401)\n",
		"node enrollment rejected (HTTP 40)\n",
		"node enrollment rejected (HTTP 401 Invalid)\n",
		"node enrollment rejected (HTTP 401 " + strings.Repeat("a", 65) + ")\n",
		"node enrollment rejected (HTTP 401) trailing\n",
		"node enrollment rejected (HTTP 401):no space\n",
	} {
		if rej, ok := parseRejection([]byte(s)); ok {
			t.Errorf("parseRejection(%q) = %+v", s, rej)
		}
	}
}
