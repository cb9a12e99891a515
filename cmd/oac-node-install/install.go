package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/asaccount"
	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/host/privsep"
	"github.com/openagentcore/oac-node-install/steps/host/trust"
	"github.com/openagentcore/oac-node-install/steps/install"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
	"github.com/openagentcore/oac-node-install/steps/record/provider"
	"github.com/openagentcore/oac-node-install/steps/record/proxy"
	"github.com/openagentcore/oac-node-install/steps/status"
	"github.com/openagentcore/oac-node-install/workflow"
)

// maxCA bounds the operator's Core CA file.
const maxCA = 1 << 20

// runInstall installs a node, or continues an installation (root only).
// This is the installation's one place of wiring: the real adapters (the
// service-account child from the captured binary, the Docker Engine,
// shadow-utils, systemd over D-Bus) handed to install.Run, which checks
// everything before the first change and runs the install workflow against
// /var/lib/oac-node-install/<id>/install.journal.
func (c *cli) runInstall(ctx context.Context, f *installerFlags) error {
	if os.Geteuid() != 0 {
		return workflow.Refuse(errors.New("installing a node requires root; rerun the same command with sudo"))
	}
	c.record("install", f.installationID.String())
	c.warnInsecure(f)
	if err := checkSource(f); err != nil {
		return err
	}
	if _, ok := os.LookupEnv("OAC_ENROLLMENT_TOKEN"); ok {
		return workflow.Refuse(errors.New("the environment holds OAC_ENROLLMENT_TOKEN: unset it; the token is read only from standard input"))
	}
	// Root reads only a private copy of the installer it is running from:
	// every child runs these bytes, never a file the service account can
	// write.
	bin, err := privsep.Capture()
	if err != nil {
		return err
	}
	defer bin.Close()
	// The token is read once the checks that need none passed (install.Run
	// calls it after the platform, systemd, SELinux and environment checks;
	// systemd's bus is dialled below, before it).
	var readTok func() (string, error)
	if f.tokenStdin {
		readTok = func() (string, error) {
			tok, err := readToken(ctx, c.stdin, c.stderr)
			c.rec.secret(tok)
			return tok, err
		}
	}
	opts, err := installOptions(f)
	if err != nil {
		return err
	}
	roots, err := coreRoots(opts.CoreCA)
	if err != nil {
		return err
	}
	proxyFunc, err := proxySettings()
	if err != nil {
		return err
	}
	sd, err := dialSystemdManager(ctx)
	if err != nil {
		return err
	}
	defer sd.Close()
	engine, err := docker.New(provider.DockerHost)
	if err != nil {
		return err
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	host := c.host()
	out := newOutput(c.progress())
	defer out.finish()
	c.out.Store(out)
	defer c.out.Store(nil)
	child := asaccount.NewChildren(privsep.Options{
		Binary: bin, Home: host.Home(), Proxy: proxy.FromEnviron(os.Environ()),
		Output: out.beside(c.stderr), Progress: out.event, NoColor: noColor(),
	}, accounts.Under(host.Root))
	rep, err := install.Run(ctx, install.Command{
		Options: opts, Host: host, ReadToken: readTok, Environ: os.Environ(), Machine: unix.ByteSliceToString(uts.Machine[:]),
		Core: install.CoreReader{Roots: roots, Proxy: proxyFunc}, Engine: engine, Accounts: accounts.Commands{},
		Systemd: sd, Child: child.Run, EndChild: child.Close, Binary: bin, Proxy: proxy.FromEnviron(os.Environ()), Version: workflow.Version,
		Out: out, Phase: out.phase, Style: out.summaryStyle(),
	})
	c.result.ran(rep)
	if err == nil && rep != nil && rep.Condition != workflow.Complete {
		again := "rerun the same command"
		if install.ShortRerun(host, f.installationID) != "" {
			again = "rerun `" + shortCommand(programName(), f.installationID) + "`"
		}
		err = fmt.Errorf("the installation stopped in state %s (%s); %s", rep.State, rep.Condition, again)
	}
	if err != nil && interruption(ctx) != nil {
		return &interruptedRun{err: err, next: resumeAdvice(host, f)}
	}
	return err
}

// resumeAdvice is what continues an installation a signal interrupted.
// Once the host records the node and the node has its credential (root's
// bookkeeping or install journal says it registered, or its register step
// began: the node program writes the identity before it enrolls), that is
// this command's own flags without the token, which the node needs no
// more and which is never printed; status names the same command. Before,
// the node still needs its enrollment token: the same command.
func resumeAdvice(h layout.Host, f *installerFlags) string {
	withToken := "rerun the same command, with its enrollment token, to continue."
	id := f.installationID
	if known, err := safefile.Exists(h.Record(id)); err != nil || !known {
		return withToken
	}
	registered, err := install.Registered(h, id)
	if err != nil {
		return withToken
	}
	if !registered {
		rep, err := workflow.InspectJournal(install.JournalPath(h, id), workflow.Lookup)
		if err != nil || !status.RegisterBegun(rep) {
			return withToken
		}
	}
	cmd := installCommand{program: programName(), sourceURL: f.sourceURL, bundle: f.bundle, coreURL: f.coreURL,
		allowInsecureOrigin: f.allowInsecureOrigin, coreCA: f.coreCA, provider: f.provider, installationID: id}
	if r, err := recall(h, id); err == nil && r.complete {
		cmd.short = true
	}
	return "to continue, run `" + cmd.String() + "` (the node has its credential: no enrollment token is needed), or rerun the same command."
}

// warnInsecure warns, on stderr, of each origin only --allow-insecure-origin
// let through.
func (c *cli) warnInsecure(f *installerFlags) {
	for _, name := range f.insecure {
		fmt.Fprintf(c.stderr, "Warning: %s uses plain http to a host that is not loopback (--allow-insecure-origin): the node's credentials cross the network unencrypted.\n", name)
	}
}

// checkSource refuses an installation source this build cannot install
// from.
func checkSource(f *installerFlags) error {
	if f.bundle != "" {
		return install.CheckBundlePath(f.bundle)
	}
	return nil
}

// installOptions are install's options from the flags, with the Core CA
// file read.
func installOptions(f *installerFlags) (install.Options, error) {
	opts := install.Options{InstallationID: f.installationID, SourceURL: f.sourceURL, Bundle: f.bundle, CoreURL: f.coreURL,
		Provider: f.provider, AllowInsecureOrigin: f.allowInsecureOrigin}
	if f.sourceURL == "" {
		// An offline install copies its files from the bundle; later
		// generations come from the console at Core's public URL.
		opts.SourceURL = f.coreURL
	}
	if f.coreCA != "" {
		var err error
		if opts.CoreCA, err = readCA(f.coreCA); err != nil {
			return opts, err
		}
	}
	return opts, nil
}

// proxySettings parses the proxy variables of the environment; its
// refusal names a variable, never its value (which may hold credentials).
func proxySettings() (func(*http.Request) (*url.URL, error), error) {
	proxyFunc, err := proxy.FromEnviron(os.Environ()).ProxyFunc()
	if err != nil {
		return nil, workflow.Refuse(err)
	}
	return proxyFunc, nil
}

// readCA reads the operator's CA bundle (a regular file, bounded). The
// file is opened without blocking (a FIFO put there after a check cannot
// hang the run) and checked through the descriptor it is read from.
func readCA(path string) ([]byte, error) {
	f, err := openRootOwned(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, workflow.Refusef("--core-ca: %w", err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxCA {
		return nil, workflow.Refusef("--core-ca %s is not a regular file of at most %d bytes", path, maxCA)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCA+1))
	if err == nil && len(data) > maxCA {
		err = fmt.Errorf("grew past %d bytes while read", maxCA)
	}
	if err != nil {
		return nil, workflow.Refusef("--core-ca: %w", err)
	}
	return data, nil
}

// coreRoots are the system roots plus the operator's CA bundle; the
// system roots are loaded only for a server the bundle does not verify.
func coreRoots(ca []byte) (*trust.Roots, error) {
	roots, err := trust.New(ca)
	if err != nil {
		return nil, workflow.Refuse(errors.New("--core-ca holds no PEM certificate"))
	}
	return roots, nil
}

// caCopyAdvice is what an operator does with a --core-ca file that is not
// safely root's: a copy made by root into a directory only root writes.
const caCopyAdvice = "copy the file as root into a directory only root can write, for example `sudo install -m 0644 <file> /root/core-ca.pem`, and pass that path"

// openRootOwned opens the file at the absolute path for reading as root
// does safely with a path others may have had a hand in: it walks the path
// from / with openat and O_NOFOLLOW, so no symbolic link is followed, and
// accepts a component only when it is owned by root and its directory
// cannot be changed by anyone but root: a directory owned by root that
// neither others nor a group other than root's can write, or a sticky one
// (like /tmp) whose entry is root's, which nobody else can rename or
// replace. Root would otherwise read what a user's link points at (the
// service account's /etc/shadow link).
func openRootOwned(path string) (*os.File, error) {
	comps := strings.Split(strings.Trim(path, "/"), "/")
	dir, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, workflow.Refusef("--core-ca: open /: %w", err)
	}
	defer func() { unix.Close(dir) }()
	var dirSt unix.Stat_t
	if err := unix.Fstat(dir, &dirSt); err != nil {
		return nil, workflow.Refusef("--core-ca: stat /: %w", err)
	}
	walked := ""
	for i, c := range comps {
		if c == "" {
			continue
		}
		last := i == len(comps)-1
		flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC
		if last {
			flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
		}
		fd, err := unix.Openat(dir, c, flags, 0)
		if errors.Is(err, unix.ELOOP) || (!last && errors.Is(err, unix.ENOTDIR)) {
			return nil, workflow.Refusef("--core-ca %s: %s/%s is a symbolic link or not a directory, which root does not follow; %s", path, walked, c, caCopyAdvice)
		}
		if err != nil {
			return nil, workflow.Refusef("--core-ca: %w", &os.PathError{Op: "open", Path: walked + "/" + c, Err: err})
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, workflow.Refusef("--core-ca: stat %s/%s: %w", walked, c, err)
		}
		if why := unsafeEntry(dirSt, st); why != "" {
			unix.Close(fd)
			return nil, workflow.Refusef("--core-ca %s: %s/%s %s, so root cannot trust what it reads there; %s", path, walked, c, why, caCopyAdvice)
		}
		walked += "/" + c
		if last {
			return os.NewFile(uintptr(fd), path), nil
		}
		unix.Close(dir)
		dir, dirSt = fd, st
	}
	return nil, workflow.Refusef("--core-ca %s names no file", path)
}

// unsafeEntry says why an entry (st) of directory dir could have been
// changed by someone other than root, or "" when it could not.
func unsafeEntry(dir, st unix.Stat_t) string {
	switch {
	case dir.Uid != 0:
		return fmt.Sprintf("is in a directory owned by uid %d", dir.Uid)
	case st.Uid != 0:
		return fmt.Sprintf("is owned by uid %d", st.Uid)
	case dir.Mode&unix.S_ISVTX != 0:
		return "" // sticky: only root renames or replaces root's entry
	case dir.Mode&0o002 != 0:
		return "is in a directory anybody can write"
	case dir.Mode&0o020 != 0 && dir.Gid != 0:
		return fmt.Sprintf("is in a directory group %d can write", dir.Gid)
	}
	return ""
}
