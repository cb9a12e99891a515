package accounts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Adapter changes the account databases. Every method concerns the service
// account layout.Account; none creates or removes its home (root does that
// itself, CONTRACT §10 "Account").
type Adapter interface {
	// CreateServiceAccount creates the system account with its own group,
	// home /var/lib/oac-node (not created) and the given nologin shell. An
	// existing account or group of that name is ErrExists.
	CreateServiceAccount(ctx context.Context, shell string) error
	// AddToGroup adds the account to a supplementary group, keeping the
	// others. A missing group or account is ErrNotFound.
	AddToGroup(ctx context.Context, group string) error
	// RemoveFromGroup removes the account from a supplementary group.
	RemoveFromGroup(ctx context.Context, group string) error
	// DeleteServiceAccount deletes the account (and its own group), not its
	// home. A missing account is ErrNotFound; a process still running as
	// the account is ErrInUse.
	DeleteServiceAccount(ctx context.Context) error
	// DeleteServiceGroup deletes the group of the account's name, which a
	// userdel cut off after it wrote /etc/passwd leaves (with /etc/group,
	// /etc/gshadow and /etc/shadow unwritten; a later useradd then fails
	// "group oac-node exists"). A missing group is ErrNotFound.
	DeleteServiceGroup(ctx context.Context) error
	// RemoveShadowOrphans removes the shadow entries of accounts passwd
	// does not have (pwconv). Callers run it only when that is all it
	// does: every passwd entry has its shadow entry and its password
	// there ("x").
	RemoveShadowOrphans(ctx context.Context) error
	// RestrictGroup gives the account's own group the /etc/gshadow entry
	// useradd makes ("oac-node:!::"), where a useradd cut off after it
	// wrote /etc/group left none (gpasswd --restrict).
	RestrictGroup(ctx context.Context) error
	// RemoveGshadowOrphans removes the /etc/gshadow entries of groups
	// /etc/group does not have (grpconv). Callers run it only when that is
	// all it does (Gshadow.Orphan).
	RemoveGshadowOrphans(ctx context.Context) error
}

// ErrExists is returned when the account or its group already exists.
var ErrExists = errors.New("already exists")

// ErrInUse is returned by DeleteServiceAccount while a process runs as the
// account.
var ErrInUse = errors.New("account is in use")

// FixedPath is the PATH the installer runs with (CONTRACT §4.5 step 1); the
// shadow-utils programs are looked up only there.
const FixedPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// NologinShells are the nologin programs a created account may get, in
// order of preference.
var NologinShells = []string{"/usr/sbin/nologin", "/sbin/nologin", "/usr/bin/nologin", "/bin/nologin"}

// FindNologin returns the first of NologinShells that exists as an
// executable file.
func FindNologin() (string, error) {
	for _, p := range NologinShells {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("no nologin program in %s", strings.Join(NologinShells, ", "))
}

// Commands is the real Adapter: shadow-utils run directly, without a shell.
// After every command that ran, whatever its exit status (a failed command
// may still have changed a database), the databases are made durable
// (Databases.Sync): shadow-utils itself fsyncs neither them nor /etc.
type Commands struct {
	// Path is the list of directories programs are looked up in; empty
	// means FixedPath.
	Path string
	// Databases are the files the programs change, synced after each
	// command; the zero value means Default (/etc).
	Databases Databases
}

var _ Adapter = Commands{}

func (c Commands) CreateServiceAccount(ctx context.Context, shell string) error {
	if !filepath.IsAbs(shell) {
		return fmt.Errorf("create account %s: shell %q is not an absolute path", layout.Account, shell)
	}
	return c.run(ctx, "useradd", map[int]error{9: ErrExists, 6: ErrNotFound},
		"--system", "--no-log-init", "--user-group", "--no-create-home", "--home-dir", layout.Default.Home(),
		"--shell", shell, layout.Account)
}

func (c Commands) AddToGroup(ctx context.Context, group string) error {
	return c.run(ctx, "usermod", map[int]error{6: ErrNotFound}, "--append", "--groups", group, layout.Account)
}

func (c Commands) RemoveFromGroup(ctx context.Context, group string) error {
	return c.run(ctx, "gpasswd", nil, "--delete", layout.Account, group)
}

func (c Commands) DeleteServiceAccount(ctx context.Context) error {
	return c.run(ctx, "userdel", map[int]error{6: ErrNotFound, 8: ErrInUse}, layout.Account)
}

func (c Commands) RemoveShadowOrphans(ctx context.Context) error {
	return c.run(ctx, "pwconv", nil)
}

func (c Commands) RestrictGroup(ctx context.Context) error {
	return c.run(ctx, "gpasswd", nil, "--restrict", layout.Account)
}

func (c Commands) RemoveGshadowOrphans(ctx context.Context) error {
	return c.run(ctx, "grpconv", nil)
}

func (c Commands) DeleteServiceGroup(ctx context.Context) error {
	return c.run(ctx, "groupdel", map[int]error{6: ErrNotFound}, layout.Account)
}

// run executes program with args and a fixed environment. A non-zero exit
// status is an error naming the command, the status and the program's own
// message, wrapping the sentinel exits maps it to.
func (c Commands) run(ctx context.Context, program string, exits map[int]error, args ...string) error {
	path := c.Path
	if path == "" {
		path = FixedPath
	}
	bin, err := lookPath(program, path)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + path, "LC_ALL=C"}
	cmd.Dir = "/"
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if cmd.Process != nil {
		if serr := c.databases().Sync(); serr != nil {
			return errors.Join(describe(err, program, args, out.String(), exits), serr)
		}
	}
	return describe(err, program, args, out.String(), exits)
}

// describe turns the result of running program into the error run returns.
func describe(err error, program string, args []string, output string, exits map[int]error) error {
	if err == nil {
		return nil
	}
	line := strings.Join(append([]string{program}, args...), " ")
	msg := strings.TrimSpace(output)
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() > 0 {
		if sentinel, ok := exits[exit.ExitCode()]; ok {
			return fmt.Errorf("%s: exit status %d: %s: %w", line, exit.ExitCode(), msg, sentinel)
		}
		return fmt.Errorf("%s: exit status %d: %s", line, exit.ExitCode(), msg)
	}
	return fmt.Errorf("%s: %w", line, err)
}

// databases are the files the commands change.
func (c Commands) databases() Databases {
	if c.Databases == (Databases{}) {
		return Default
	}
	return c.Databases
}

// lookPath finds program in the directories of path, never in the
// process's own PATH.
func lookPath(program, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		p := filepath.Join(dir, program)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not installed (looked in %s)", program, path)
}
