package microsandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/strictjson"
)

// Inventory is a complete list of the images in the store, as `msb image
// list --quiet` printed it. Only ListImages makes one; the zero value is
// not complete and proves nothing.
type Inventory struct {
	refs     map[string]bool
	complete bool
}

// Complete reports whether the inventory came from a successful, fully
// parsed listing.
func (inv *Inventory) Complete() bool { return inv != nil && inv.complete }

// Contains reports whether the inventory lists ref.
func (inv *Inventory) Contains(ref Reference) bool { return inv != nil && inv.refs[ref.String()] }

// Refs lists the references, sorted.
func (inv *Inventory) Refs() []string {
	out := make([]string, 0, len(inv.refs))
	for r := range inv.refs {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// ListImages takes a complete image inventory with `msb image list
// --quiet`: one name@sha256:<64 hex> reference per line, nothing else
// (blank lines are ignored; an empty listing is an empty store). Any
// failure returns an *InventoryError: absence is never concluded from a
// failed or malformed listing.
func (c *CLI) ListImages(ctx context.Context) (*Inventory, error) {
	out, err := c.run(ctx, orDefault(c.QueryTimeout, DefaultQueryTimeout), maxInventoryOutput, "image", "list", "--quiet")
	if err != nil {
		return nil, &InventoryError{Query: "image list", Err: err}
	}
	inv, err := parseImageList(out)
	if err != nil {
		return nil, &InventoryError{Query: "image list", Err: err}
	}
	return inv, nil
}

func parseImageList(out []byte) (*Inventory, error) {
	inv := &Inventory{refs: map[string]bool{}, complete: true}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		return nil, fmt.Errorf("%w: the listing does not end with a newline", ErrMalformedOutput)
	}
	for n, line := range bytes.Split(out, []byte("\n")) {
		s := strings.TrimRight(string(line), "\r")
		if strings.TrimSpace(s) == "" {
			continue
		}
		ref, err := ParseReference(s)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d is not a name@sha256 reference", ErrMalformedOutput, n+1)
		}
		inv.refs[ref.String()] = true
	}
	return inv, nil
}

// RemoveImage removes ref from the installation-private store, only for
// collection. It requires a complete inventory: nil or incomplete returns
// ErrInventoryIncomplete; an inventory without ref means the image is
// proven absent and nothing runs (removed false). Otherwise it runs `msb
// image remove <ref>`; a refusal (for example an image in use) is
// ErrRemoveRefused. A fresh complete inventory must then no longer list
// ref.
func (c *CLI) RemoveImage(ctx context.Context, inv *Inventory, ref Reference) (removed bool, err error) {
	if !inv.Complete() {
		return false, &InventoryError{Query: "image list", Err: fmt.Errorf("no complete inventory was taken before removing %s", ref)}
	}
	if !inv.Contains(ref) {
		return false, nil
	}
	if _, err := c.run(ctx, orDefault(c.RemoveTimeout, DefaultRemoveTimeout), maxQueryOutput, "image", "remove", ref.String()); err != nil {
		return false, fmt.Errorf("%w: %w", ErrRemoveRefused, err)
	}
	after, err := c.ListImages(ctx)
	if err != nil {
		return true, fmt.Errorf("verify removal of %s: %w", ref, err)
	}
	if after.Contains(ref) {
		return true, fmt.Errorf("%w: %s is still listed after removal", ErrRemoveRefused, ref)
	}
	return true, nil
}

// Sandboxes runs `msb sandbox list --format json` and returns how many
// sandboxes the store has; `[]` means none. A failed query or output that
// is not a JSON array is an *InventoryError.
// inventoryFormat reads msb's sandbox list: one array, its entries opaque.
var inventoryFormat = strictjson.Format{MaxSize: maxInventoryOutput}

func (c *CLI) Sandboxes(ctx context.Context) (int, error) {
	out, err := c.run(ctx, orDefault(c.QueryTimeout, DefaultQueryTimeout), maxInventoryOutput, "sandbox", "list", "--format", "json")
	if err != nil {
		return 0, &InventoryError{Query: "sandbox list", Err: err}
	}
	var list []json.RawMessage
	if err := inventoryFormat.Decode(out, &list); err != nil {
		return 0, &InventoryError{Query: "sandbox list", Err: fmt.Errorf("%w: not one JSON array: %v", ErrMalformedOutput, err)}
	}
	return len(list), nil
}
