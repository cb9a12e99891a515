package microsandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// Reference is an image reference name@sha256:<64 hex>, such as the
// manifest's runtime_ref "oac-runtime@sha256:…".
type Reference struct {
	Name   string
	Digest string // "sha256:<64 hex>"
}

func (r Reference) String() string { return r.Name + "@" + r.Digest }

// ParseReference parses name@sha256:<64 hex>. The name is lowercase
// letters, digits and the separators . _ - / :, starting with a letter or
// digit.
func ParseReference(s string) (Reference, error) {
	name, digest, ok := strings.Cut(s, "@")
	if !ok || !validName(name) || !validDigest(digest) {
		return Reference{}, fmt.Errorf("%w: %q", ErrInvalidReference, truncate(s))
	}
	return Reference{Name: name, Digest: digest}, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-' || c == '/' || c == ':'):
		default:
			return false
		}
	}
	return true
}

func validDigest(s string) bool {
	hex, ok := strings.CutPrefix(s, "sha256:")
	if !ok || len(hex) != 64 {
		return false
	}
	for i := 0; i < len(hex); i++ {
		if c := hex[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// Image is what `msb image inspect --format json` reports about an image.
type Image struct {
	Digest       string
	Architecture string
	OS           string
}

// InspectImage runs `msb image inspect <ref> --format json`. A failed
// command is a *CommandError (an image msb does not have is one too: msb's
// exit status does not say why); output that is not an inspection is
// ErrMalformedOutput.
func (c *CLI) InspectImage(ctx context.Context, ref Reference) (Image, error) {
	out, err := c.run(ctx, orDefault(c.QueryTimeout, DefaultQueryTimeout), maxQueryOutput,
		"image", "inspect", ref.String(), "--format", "json")
	if err != nil {
		return Image{}, err
	}
	img, err := parseInspect(out)
	if err != nil {
		return Image{}, fmt.Errorf("msb image inspect %s: %w", ref, err)
	}
	return img, nil
}

// inspectFormat reads msb's inspection: any keys (msb versions differ, and
// parseInspect matches their spellings itself), but one value per key.
var inspectFormat = strictjson.Format{MaxSize: maxQueryOutput}

// parseInspect accepts one JSON object (or an array holding exactly one)
// that names the image digest, architecture and OS, at its top level or in
// a "config" or "platform" object. Key names are matched as msb versions
// spell them (digest/Digest, architecture/Architecture, os/Os/OS). Exactly
// one value per field must be found.
func parseInspect(out []byte) (Image, error) {
	var v any
	if err := inspectFormat.Decode(out, &v); err != nil {
		return Image{}, fmt.Errorf("%w: not one JSON document: %v", ErrMalformedOutput, err)
	}
	if arr, ok := v.([]any); ok {
		if len(arr) != 1 {
			return Image{}, fmt.Errorf("%w: %d images instead of one", ErrMalformedOutput, len(arr))
		}
		v = arr[0]
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return Image{}, fmt.Errorf("%w: not a JSON object", ErrMalformedOutput)
	}
	scopes := []map[string]any{obj}
	for _, k := range []string{"config", "Config", "platform", "Platform"} {
		if sub, ok := obj[k].(map[string]any); ok {
			scopes = append(scopes, sub)
		}
	}
	find := func(field string, keys ...string) (string, error) {
		var found []string
		for _, s := range scopes {
			for _, k := range keys {
				if raw, ok := s[k]; ok {
					str, ok := raw.(string)
					if !ok {
						return "", fmt.Errorf("%w: %s is not a string", ErrMalformedOutput, k)
					}
					found = append(found, str)
				}
			}
		}
		switch {
		case len(found) == 0:
			return "", fmt.Errorf("%w: no %s", ErrMalformedOutput, field)
		case len(found) > 1:
			for _, f := range found[1:] {
				if f != found[0] {
					return "", fmt.Errorf("%w: conflicting %s values", ErrMalformedOutput, field)
				}
			}
		}
		return found[0], nil
	}
	var img Image
	var err error
	if img.Digest, err = find("digest", "digest", "Digest"); err != nil {
		return Image{}, err
	}
	if !validDigest(img.Digest) {
		return Image{}, fmt.Errorf("%w: digest %q is not sha256:<64 hex>", ErrMalformedOutput, truncate(img.Digest))
	}
	if img.Architecture, err = find("architecture", "architecture", "Architecture"); err != nil {
		return Image{}, err
	}
	if img.OS, err = find("os", "os", "Os", "OS"); err != nil {
		return Image{}, err
	}
	return img, nil
}

// VerifyImage requires that msb has ref as the same digest for linux/amd64.
// A mismatch is ErrImageMismatch; a failed or malformed query is returned
// as such.
func (c *CLI) VerifyImage(ctx context.Context, ref Reference) error {
	img, err := c.InspectImage(ctx, ref)
	if err != nil {
		return err
	}
	if img.Digest != ref.Digest || img.Architecture != "amd64" || img.OS != "linux" {
		return fmt.Errorf("%w: %s is %s %s/%s, want %s linux/amd64", ErrImageMismatch, ref, img.Digest, img.OS, img.Architecture, ref.Digest)
	}
	return nil
}

// LoadImage runs `msb image load --input <archive> --tag <ref> --quiet`
// with the load timeout (default 30 minutes).
func (c *CLI) LoadImage(ctx context.Context, archive string, ref Reference) error {
	if !filepath.IsAbs(archive) {
		return fmt.Errorf("load microsandbox image: archive path %q is not absolute", archive)
	}
	_, err := c.run(ctx, orDefault(c.LoadTimeout, DefaultLoadTimeout), maxQueryOutput,
		"image", "load", "--input", archive, "--tag", ref.String(), "--quiet")
	return err
}

// EnsureImage makes ref present: if msb already reports it (digest,
// linux/amd64) nothing is loaded; otherwise the archive is loaded and the
// image verified again. It reports whether it loaded.
func (c *CLI) EnsureImage(ctx context.Context, archive string, ref Reference) (loaded bool, err error) {
	if c.VerifyImage(ctx, ref) == nil {
		return false, nil
	}
	if err := c.LoadImage(ctx, archive, ref); err != nil {
		return false, err
	}
	if err := c.VerifyImage(ctx, ref); err != nil {
		return true, fmt.Errorf("after loading %s: %w", archive, err)
	}
	return true, nil
}
