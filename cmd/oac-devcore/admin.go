package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/openagentcore/oac-node-install/cmd/oac-devcore/devcore"
	"github.com/openagentcore/oac-node-install/steps/record/ident"
)

const adminUsage = `usage: oac-devcore admin --data DIR COMMAND
  token [--max-active N] [--max-retained N]   print a new enrollment token (10 minutes, single use)
  nodes                                       list the nodes (JSON)
  remove-node NODE_ID                         remove a node; its credential gets 401 from then on
  deployment                                  show the generations (JSON)
  publish-generation                          publish a new Runtime release as the next generation (JSON)
  drop-generation N                           grant the collection of generation N (JSON)
  bundle OUT                                  write an offline bundle at the new directory OUT
  pause-artifacts                             hold artifact downloads halfway until resume-artifacts (JSON)
  resume-artifacts                            let held artifact downloads finish (JSON)
  artifacts                                   show whether artifact downloads are held, and how many (JSON)`

// admin calls the admin routes of the console running on --data, with the
// admin key and the CA found there.
func admin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("oac-devcore admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "data directory of the running console")
	if err := fs.Parse(args); err != nil || *data == "" || fs.NArg() == 0 {
		fmt.Fprintln(stderr, adminUsage)
		return 2
	}
	rest := fs.Args()
	if rest[0] == "bundle" {
		return adminBundle(ctx, *data, rest[1:], stdout, stderr)
	}
	var method, path, body string
	if code, ok := adminArtifacts(ctx, *data, rest, stdout, stderr); ok {
		return code
	}
	switch rest[0] {
	case "token":
		tf := flag.NewFlagSet("token", flag.ContinueOnError)
		tf.SetOutput(stderr)
		maxActive := tf.Int64("max-active", 0, "sandboxes the node may run (default 4)")
		maxRetained := tf.Int64("max-retained", 0, "sandboxes the node may keep (default 8; Docker: max-active)")
		if err := tf.Parse(rest[1:]); err != nil || tf.NArg() > 0 {
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		var parts []string
		if *maxActive > 0 {
			parts = append(parts, `"max_active":`+strconv.FormatInt(*maxActive, 10))
		}
		if *maxRetained > 0 {
			parts = append(parts, `"max_retained":`+strconv.FormatInt(*maxRetained, 10))
		}
		method, path, body = http.MethodPost, "/core/v1/sandbox/enrollment-tokens", "{"+strings.Join(parts, ",")+"}"
	case "nodes":
		if len(rest) != 1 {
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		method, path = http.MethodGet, "/core/v1/sandbox/nodes"
	case "remove-node":
		if len(rest) != 2 || !ident.CanonicalUUID(rest[1]) {
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		method, path = http.MethodDelete, "/core/v1/sandbox/nodes/"+rest[1]
	case "deployment":
		if len(rest) != 1 {
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		method, path = http.MethodGet, "/core/v1/sandbox/deployment"
	case "publish-generation":
		if len(rest) != 1 {
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		method, path = http.MethodPost, "/core/v1/sandbox/deployment/generations"
	case "drop-generation":
		if len(rest) != 2 {
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		if _, err := strconv.ParseInt(rest[1], 10, 64); err != nil {
			fmt.Fprintln(stderr, adminUsage)
			return 2
		}
		method, path = http.MethodPost, "/core/v1/sandbox/deployment/generations/"+rest[1]+"/drop"
	default:
		fmt.Fprintln(stderr, adminUsage)
		return 2
	}
	answer, err := adminCall(ctx, *data, method, path, body)
	if err != nil {
		fmt.Fprintf(stderr, "oac-devcore admin: %v\n", err)
		return 1
	}
	if rest[0] == "token" {
		var tr devcore.TokenResponse
		if err := decodeJSON(answer, &tr); err != nil {
			fmt.Fprintf(stderr, "oac-devcore admin: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, tr.Token)
		return 0
	}
	if len(answer) > 0 {
		stdout.Write(answer)
	}
	return 0
}

// adminCall sends one admin request to the console running on dataDir.
func adminCall(ctx context.Context, dataDir, method, path, body string) ([]byte, error) {
	url, err := os.ReadFile(filepath.Join(dataDir, devcore.URLFileName))
	if err != nil {
		return nil, fmt.Errorf("no running console on %s: %w", dataDir, err)
	}
	key, err := os.ReadFile(filepath.Join(dataDir, devcore.AdminKeyFileName))
	if err != nil {
		return nil, fmt.Errorf("read the admin key: %w", err)
	}
	ca, err := devcore.LoadOrCreateCA(dataDir)
	if err != nil {
		return nil, err
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSpace(string(url))+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&devcore.Server{CA: ca}).Client().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: HTTP %d %s", method, path, resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	return answer, nil
}

func decodeJSON(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("the answer is not JSON: %w", err)
	}
	return nil
}

// adminArtifacts runs the artifact hold's commands (pause-artifacts,
// resume-artifacts, artifacts); ok is false for any other command.
func adminArtifacts(ctx context.Context, data string, rest []string, stdout, stderr io.Writer) (code int, ok bool) {
	var method, path string
	switch rest[0] {
	case "pause-artifacts":
		method, path = http.MethodPost, "/core/v1/devcore/artifacts/pause"
	case "resume-artifacts":
		method, path = http.MethodPost, "/core/v1/devcore/artifacts/resume"
	case "artifacts":
		method, path = http.MethodGet, "/core/v1/devcore/artifacts"
	default:
		return 0, false
	}
	if len(rest) != 1 {
		fmt.Fprintln(stderr, adminUsage)
		return 2, true
	}
	answer, err := adminCall(ctx, data, method, path, "")
	if err != nil {
		fmt.Fprintf(stderr, "oac-devcore admin: %v\n", err)
		return 1, true
	}
	stdout.Write(answer)
	return 0, true
}
