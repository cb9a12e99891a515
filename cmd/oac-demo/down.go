package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/testsupport/testhost"
)

// down uninstalls the node and removes everything up started, whatever
// stage up reached; with nothing up it changes nothing. It exits non-zero
// only when something could not be removed or the machine is not as
// before up.
func (d *demo) down() int {
	if _, err := os.Lstat(d.state); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(d.out, "oac-demo: nothing to remove: no demo in %s\n", d.state)
		return 0
	}
	l, err := d.lock()
	if err != nil {
		d.fail("%v", err)
		return 1
	}
	defer l.Unlock()
	st, err := d.loadState()
	if err != nil {
		d.fail("%v", err)
		return 1
	}
	if st == nil {
		st = &state{}
	}
	hostDirs, err := testhost.FindDetached(d.state)
	if err != nil {
		d.fail("%v", err)
		return 1
	}
	var hosts []*testhost.Detached
	for _, dir := range hostDirs {
		if h, err := testhost.OpenDetached(dir); err == nil && h.Running() {
			hosts = append(hosts, h)
		}
	}
	c := st.Devcore
	var id string
	if c != nil {
		id = c.InstallationID
	}
	coreUp := c.running() && c.URL != ""

	// Remove the node in Core first (the Nodes page): uninstall refuses
	// while Core lists it.
	if coreUp {
		d.step("remove the node in Core (oac-devcore admin remove-node)")
		nodes, err := d.nodeIDs(c)
		if err != nil {
			d.say("%v", err)
		}
		for _, n := range nodes {
			if _, err := d.admin(c, "remove-node", n); err != nil {
				d.say("%v", err)
				continue
			}
			d.say("removed node %s", n)
		}
		if len(nodes) == 0 && err == nil {
			d.say("Core lists no node")
		}
	}

	// Uninstall in the test host, as the operator would.
	for _, h := range hosts {
		if id == "" || !st.Installing {
			d.step("uninstall: the installer never ran in the test host")
			break
		}
		home := d.statePath(homeDir)
		argv := []string{d.binary("oac-node-install"), "--uninstall", "--installation-id", id}
		if !coreUp {
			// No Core to confirm that the node is gone.
			argv = append(argv, "--force")
		}
		d.step("uninstall the node in the test host")
		fmt.Fprintf(d.out, "# %s\n", strings.Join(argv, " "))
		status, err := d.hostRun(h, home, nil, argv...)
		if err != nil {
			d.say("%v", err)
		} else if status != 0 {
			d.say("the uninstall exited %d; the test host is removed below anyway, with everything installed in it", status)
		}
		d.step("oac-node-install status")
		fmt.Fprintf(d.out, "# %s status\n", d.binary("oac-node-install"))
		if _, err := d.hostRun(h, home, nil, d.binary("oac-node-install"), "status"); err != nil {
			d.say("%v", err)
		}
	}

	d.step("tear down")
	var errs []error
	for _, dir := range hostDirs {
		h, _ := testhost.OpenDetached(dir)
		if err := testhost.TeardownDetached(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		if h != nil && h.PID > 0 {
			d.say("test host ended: PID 1 (pid %d) killed; cgroups %s and %s removed", h.PID, strings.Join(h.Cgroups, ", "), dir)
		} else {
			d.say("test host %s removed", dir)
		}
	}
	consoles := strayDevcores(d.statePath(devcoreData), c)
	if c != nil {
		consoles = append([]*devcoreState{c}, consoles...)
	}
	for _, c := range consoles {
		if err := stopDevcore(c); err != nil {
			errs = append(errs, err)
		} else {
			d.say("oac-devcore (pid %d) stopped", c.PID)
		}
	}
	if id != "" {
		errs = append(errs, d.removeEngineObjects(id)...)
	}
	if st.Image != nil {
		errs = append(errs, d.removeImage(st.Image)...)
	}
	if len(errs) > 0 {
		for _, err := range errs {
			d.fail("%v", err)
		}
		d.fail("the state in %s stays; rerun `%s`", d.state, d.downCommand())
		return 1
	}

	code := 0
	if st.Snapshot != nil {
		d.step("check that the machine is as before")
		now, err := testhost.TakeSnapshot()
		if err != nil {
			d.fail("%v", err)
			return 1
		}
		if diff := st.Snapshot.Diff(now); len(diff) > 0 {
			d.fail("the machine changed since `oac-demo up`:\n  %s", strings.Join(diff, "\n  "))
			code = 1
		} else {
			d.say("unchanged: /etc/passwd, /etc/group, /etc/shadow, /etc/gshadow, /etc/systemd/system, /etc/oac-node, /usr/local/sbin, kernel.core_pattern")
		}
	}
	if err := os.RemoveAll(d.state); err != nil {
		d.fail("%v", err)
		return 1
	}
	d.say("removed %s", d.state)
	return code
}

// removeEngineObjects removes what the installation made in the machine's
// engine and uninstall did not get to: containers and the network labelled
// with the installation.
func (d *demo) removeEngineObjects(id string) []error {
	var errs []error
	out, err := docker("ps", "-aq", "--filter", "label=io.oac.installation="+id)
	if err != nil {
		return []error{err}
	}
	for _, ctr := range strings.Fields(out) {
		if _, err := docker("rm", "-f", ctr); err != nil && !isNotExist(err) {
			errs = append(errs, err)
		} else {
			d.say("removed the container %s", ctr)
		}
	}
	name := "oac-node-" + id
	label, err := docker("network", "inspect", "--format", `{{index .Labels "io.oac.installation"}}`, name)
	switch {
	case isNotExist(err):
	case err != nil:
		errs = append(errs, err)
	case label != id:
		d.say("keep the Docker network %s: it is not labelled io.oac.installation=%s", name, id)
	default:
		if _, err := docker("network", "rm", name); err != nil && !isNotExist(err) {
			errs = append(errs, err)
		} else {
			d.say("removed the Docker network %s", name)
		}
	}
	return errs
}

// removeImage removes the fixture Runtime image when the engine did not
// have it before up. A container still using it (another node's) keeps
// it: docker refuses.
func (d *demo) removeImage(img *imageState) []error {
	if img.Existed {
		d.say("keep the Runtime image %s: the engine had it before the demo", img.IDs[0])
		return nil
	}
	var errs []error
	for _, ref := range img.IDs {
		if _, err := docker("image", "inspect", "--format", "{{.Id}}", ref); isNotExist(err) {
			continue
		} else if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := docker("image", "rm", ref); err != nil && !isNotExist(err) {
			errs = append(errs, err)
			continue
		}
		d.say("removed the Runtime image %s", ref)
	}
	return errs
}
