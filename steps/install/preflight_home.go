package install

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// sudoUserNode refuses a new node whose installation already has a node
// root in the home of the user who ran sudo ($SUDO_USER): a node installed
// there by hand, which the installer neither adopts nor removes
// (CONTRACT §10's order, preflight step 4).
func (p *Preflight) sudoUserNode() Check {
	c := Check{Name: "no node of this installation in the sudo user's home"}
	if !p.NewNode {
		return c
	}
	user := ""
	for _, kv := range p.Environ {
		if v, ok := strings.CutPrefix(kv, "SUDO_USER="); ok {
			user = v
		}
	}
	if user == "" || user == "root" {
		return c
	}
	u, err := accounts.Under(p.Host.Root).LookupUser(user)
	if err != nil || !filepath.IsAbs(u.Home) || u.Home == "/" {
		return c
	}
	// The user's home is the user's to change: looked into through no
	// symbolic link.
	rel := layout.NodeRel(p.InstallationID)
	home, err := safefile.OpenRoot(filepath.Join(p.Host.Root, u.Home))
	if err != nil {
		return c
	}
	defer home.Close()
	ok, err := home.Exists(rel)
	if errors.Is(err, safefile.ErrUnsafe) {
		c.Skipped = fmt.Sprintf("%s is reached through a symbolic link, which is not followed", filepath.Join(u.Home, rel))
		return c
	}
	if ok {
		c.Err = fmt.Errorf("%s exists: a node of this installation runs from %s's home", filepath.Join(u.Home, rel), user)
		c.Hint = "Stop and remove that node first; the installer runs nodes only as the oac-node account"
	}
	return c
}
